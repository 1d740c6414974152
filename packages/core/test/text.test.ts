import { describe, expect, it } from 'vitest';
import {
  assertNoNul,
  Context,
  ContextError,
  checkIdempotencyKey,
  MAX_IDEMPOTENCY_KEY_BYTES,
  replaceNul,
  toJson,
  ValidationError,
} from '../src/index.js';

describe('NUL characters in user text', () => {
  it('assertNoNul refuses text with a NUL with a ValidationError naming the value, and returns clean text', () => {
    expect(assertNoNul('fine', 'name')).toBe('fine');
    expect(() => assertNoNul('a\u0000b', 'The pause reason')).toThrow(ValidationError);
    expect(() => assertNoNul('a\u0000b', 'The pause reason')).toThrow(/The pause reason contains a NUL character/);
    expect(() => assertNoNul('a\u0000b', 'x', (m) => new ContextError(m))).toThrow(ContextError);
  });

  it('replaceNul makes runner-written text storable', () => {
    expect(replaceNul('a\u0000b\u0000')).toBe('a\uFFFDb\uFFFD');
    expect(replaceNul('clean')).toBe('clean');
  });

  it('Context keeps NUL in values and keys: the adapters store them (PostgreSQL as a jsonb string)', () => {
    const ctx = new Context({ 'k\u0000': 'a\u0000b' });
    ctx.set('deep', { list: ['\u0000'] });
    expect(ctx.toJSON()).toEqual({ 'k\u0000': 'a\u0000b', deep: { list: ['\u0000'] } });
    expect(toJson({ a: 'x\u0000' }, 'input')).toEqual({ a: 'x\u0000' });
  });
});

describe('checkIdempotencyKey', () => {
  it(`accepts keys up to ${MAX_IDEMPOTENCY_KEY_BYTES} UTF-8 bytes and refuses longer ones naming the limit`, () => {
    expect(checkIdempotencyKey(undefined)).toBeNull();
    expect(checkIdempotencyKey('k'.repeat(MAX_IDEMPOTENCY_KEY_BYTES))).toHaveLength(MAX_IDEMPOTENCY_KEY_BYTES);
    expect(() => checkIdempotencyKey('k'.repeat(MAX_IDEMPOTENCY_KEY_BYTES + 1))).toThrow(ValidationError);
    // 'é' is two bytes in UTF-8: the limit counts bytes, not characters.
    expect(() => checkIdempotencyKey('é'.repeat(MAX_IDEMPOTENCY_KEY_BYTES / 2 + 1))).toThrow(
      new RegExp(`over the limit of ${MAX_IDEMPOTENCY_KEY_BYTES}`),
    );
  });

  it('refuses an empty key, a non-string and a key with a NUL', () => {
    expect(() => checkIdempotencyKey('')).toThrow(ValidationError);
    expect(() => checkIdempotencyKey(42)).toThrow(ValidationError);
    expect(() => checkIdempotencyKey(null)).toThrow(ValidationError);
    expect(() => checkIdempotencyKey('a\u0000b')).toThrow(/NUL character/);
  });
});
