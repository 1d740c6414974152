import { ValidationError } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { canonicalUuid, dateToIso, decodeJson, encodeJson, parseTimestamptz } from '../src/codec.js';

describe('codec', () => {
  it('writes UUIDs in canonical lower case and refuses what is not one with a ValidationError', () => {
    expect(canonicalUuid('3F2A8C1E-5B7D-4E9F-8A6C-1D2E3F4A5B6C')).toBe('3f2a8c1e-5b7d-4e9f-8a6c-1d2e3f4a5b6c');
    expect(() => canonicalUuid('not-a-uuid')).toThrow(ValidationError);
  });

  it('truncates instants to whole milliseconds and refuses an invalid Date', () => {
    expect(dateToIso(new Date(1_700_000_000_123.9))).toBe('2023-11-14T22:13:20.123Z');
    expect(() => dateToIso(new Date(Number.NaN))).toThrow(ValidationError);
  });

  it('reads timestamptz text with or without a fraction, any offset, and the ISO form to_json writes', () => {
    expect(parseTimestamptz('2026-01-02 03:04:05.678+00')).toEqual(new Date('2026-01-02T03:04:05.678Z'));
    expect(parseTimestamptz('2026-01-02 03:04:05+00')).toEqual(new Date('2026-01-02T03:04:05.000Z'));
    expect(parseTimestamptz('2026-01-02 03:04:05.6+05:30')).toEqual(new Date('2026-01-01T21:34:05.600Z'));
    expect(parseTimestamptz('1969-12-31 23:59:59.999-01')).toEqual(new Date('1970-01-01T00:59:59.999Z'));
    expect(parseTimestamptz('2026-01-02T03:04:05.678+00:00')).toEqual(new Date('2026-01-02T03:04:05.678Z'));
    // UTC text with a fraction of any length up to microseconds (read without the regular expression), and past them.
    expect(parseTimestamptz('2026-12-31 23:59:59.123456+00')).toEqual(new Date('2026-12-31T23:59:59.123Z'));
    expect(parseTimestamptz('2026-12-31 23:59:59.05+00')).toEqual(new Date('2026-12-31T23:59:59.050Z'));
    expect(parseTimestamptz('2026-12-31 23:59:59.9+00')).toEqual(new Date('2026-12-31T23:59:59.900Z'));
    expect(parseTimestamptz('0100-03-01 00:00:00+00').toISOString()).toBe('0100-03-01T00:00:00.000Z');
    // The same in the form to_json writes (the claim's and the finish's rows).
    expect(parseTimestamptz('2026-12-31T23:59:59.05+00:00')).toEqual(new Date('2026-12-31T23:59:59.050Z'));
    expect(parseTimestamptz('2026-12-31T23:59:59+00:00')).toEqual(new Date('2026-12-31T23:59:59.000Z'));
    expect(parseTimestamptz('2026-12-31T23:59:59.123456+00:00')).toEqual(new Date('2026-12-31T23:59:59.123Z'));
    expect(parseTimestamptz('2026-12-31T23:59:59.9+05:00')).toEqual(new Date('2026-12-31T18:59:59.900Z'));
  });

  it('reads instants in any server time zone: offsets with minutes, with seconds (local mean time), and years before 100', () => {
    expect(parseTimestamptz('2026-01-02 08:49:05.678+05:45')).toEqual(new Date('2026-01-02T03:04:05.678Z'));
    expect(parseTimestamptz('2026-01-01 23:34:05.678-03:30')).toEqual(new Date('2026-01-02T03:04:05.678Z'));
    expect(parseTimestamptz('1850-01-01 00:53:28+00:53:28')).toEqual(new Date('1850-01-01T00:00:00.000Z'));
    expect(parseTimestamptz('0099-06-01 00:00:00+00').toISOString()).toBe('0099-06-01T00:00:00.000Z');
  });

  it('stores JSON as jsonb text, and JSON that jsonb refuses (NUL, lone surrogates) as a jsonb string of it', () => {
    const plain = { a: [1, 'two'], b: { c: null } };
    expect(encodeJson(plain)).toBe(JSON.stringify(plain));
    expect(decodeJson(JSON.parse(encodeJson(plain)))).toEqual(plain);
    for (const awkward of [{ nul: 'a\u0000b' }, { lone: 'x\ud800y' }, ['\udfff'], { 'key\u0000': 1 }]) {
      const stored = JSON.parse(encodeJson(awkward));
      expect(typeof stored).toBe('string');
      expect(decodeJson(stored)).toEqual(awkward);
      expect(decodeJson(encodeJson(awkward))).toEqual(awkward);
    }
  });

  it('keeps a string that merely looks like an escape exactly as written', () => {
    const tricky = { text: 'a backslash-u: \\u0000 and \\ud800, literally' };
    expect(decodeJson(JSON.parse(encodeJson(tricky)))).toEqual(tricky);
  });
});
