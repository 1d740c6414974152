import { ValidationError } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { bytesToUuid, dateToMillis, encodeUuidList, uuidToBytes } from '../src/codec.js';

describe('codec', () => {
  it('stores a UUID as its 16 bytes and reads back the canonical lower-case string', () => {
    const id = '3F2A8C1E-5B7D-4E9F-8A6C-1D2E3F4A5B6C';
    const bytes = uuidToBytes(id);
    expect(bytes).toHaveLength(16);
    expect(bytes.toString('hex')).toBe('3f2a8c1e5b7d4e9f8a6c1d2e3f4a5b6c');
    expect(bytesToUuid(bytes)).toBe(id.toLowerCase());
  });

  it('refuses a string that is not a UUID with a ValidationError', () => {
    expect(() => uuidToBytes('not-a-uuid')).toThrow(ValidationError);
  });

  it('truncates instants to whole milliseconds', () => {
    expect(dateToMillis(new Date(1_700_000_000_123.9))).toBe(1_700_000_000_123);
    expect(() => dateToMillis(new Date(Number.NaN))).toThrow(ValidationError);
  });

  it('encodes an id list as hex strings for json_each', () => {
    expect(JSON.parse(encodeUuidList(['3f2a8c1e-5b7d-4e9f-8a6c-1d2e3f4a5b6c']))).toEqual([
      '3f2a8c1e5b7d4e9f8a6c1d2e3f4a5b6c',
    ]);
  });
});
