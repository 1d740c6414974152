import { ValidationError } from './errors.js';

/**
 * Checks on user text before it reaches storage. PostgreSQL cannot store the NUL character
 * (U+0000) in `text` or `jsonb` ("invalid byte sequence for encoding UTF8: 0x00"); SQLite
 * can. Text that would be refused on one adapter is refused up front on both, so that a bad
 * value fails its own call with a typed error instead of every later statement that reads it.
 */

const NUL = '\u0000';

/** What replaces a NUL character in text the runner writes itself (a task's error message). */
export const NUL_REPLACEMENT = '\uFFFD';

/**
 * The longest idempotency key accepted, in UTF-8 bytes. PostgreSQL's btree index refuses
 * entries over about 2.7 kB, which would fail the write of every pipeline batched with the
 * offending one; a key is an identifier (a request id, a UUID, a hash), so 1 KiB is plenty.
 * Both adapters refuse longer keys alike.
 */
export const MAX_IDEMPOTENCY_KEY_BYTES = 1024;

/** True when `text` holds a NUL character (U+0000). */
export function hasNul(text: string): boolean {
  return text.includes(NUL);
}

/**
 * Refuses user text holding a NUL character, which PostgreSQL cannot store. Returns the text.
 * @param what Names the value in the message, e.g. `Workflow name "a…"` or `pause reason`.
 * @param makeError Builds the error; a ValidationError by default (a ContextError for context
 *   values, a WorkflowValidationError for definitions, a ConfigurationError for options).
 * @throws ValidationError (or what `makeError` builds) when `text` holds a NUL.
 */
export function assertNoNul(
  text: string,
  what: string,
  makeError: (message: string) => Error = (message) => new ValidationError(message),
): string {
  if (hasNul(text)) {
    throw makeError(
      `${what} contains a NUL character (\\u0000), which PostgreSQL cannot store; remove it (or encode binary data, e.g. as base64).`,
    );
  }
  return text;
}

/**
 * Text the runner writes on a user's behalf (the message of an error a task threw) with every
 * NUL replaced by U+FFFD, so that storing it can never fail: a task throwing
 * `new Error('a\u0000b')` must fail its attempt, not wedge the commit of its outcome.
 */
export function replaceNul(text: string): string {
  return hasNul(text) ? text.replaceAll(NUL, NUL_REPLACEMENT) : text;
}

/**
 * Checks an idempotency key: a non-empty string without NUL, at most
 * {@link MAX_IDEMPOTENCY_KEY_BYTES} bytes in UTF-8. Returns it, or null when undefined.
 * @throws ValidationError naming the key and the limit.
 */
export function checkIdempotencyKey(key: unknown): string | null {
  if (key === undefined) return null;
  if (typeof key !== 'string' || key === '') {
    throw new ValidationError(`idempotencyKey must be a non-empty string, got ${JSON.stringify(key)}.`);
  }
  assertNoNul(key, 'idempotencyKey');
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes > MAX_IDEMPOTENCY_KEY_BYTES) {
    throw new ValidationError(
      `idempotencyKey "${key.slice(0, 40)}…" is ${bytes} bytes in UTF-8, over the limit of ${MAX_IDEMPOTENCY_KEY_BYTES}; use a shorter key, such as a hash of the request.`,
    );
  }
  return key;
}
