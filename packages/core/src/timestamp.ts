import { ValidationError } from './errors.js';

/** Earliest instant a column holds on every adapter: 0001-01-01T00:00:00.000Z. */
export const MIN_STORABLE_DATE = new Date('0001-01-01T00:00:00.000Z');
/**
 * Latest instant a column holds on every adapter: 9999-12-31T23:59:59.999Z. Postgres reads
 * ISO-8601 only with four-digit years; SQLite would hold more, but the adapters refuse the same
 * input.
 */
export const MAX_STORABLE_DATE = new Date('9999-12-31T23:59:59.999Z');

/**
 * Checks that `epochMs` is an instant both adapters store (years 1 to 9999, UTC), and returns it.
 * @throws ValidationError naming `what`, the instant and the range.
 */
export function assertStorableMillis(epochMs: number, what = 'Date'): number {
  if (!Number.isFinite(epochMs)) {
    throw new ValidationError(`${what} is an invalid Date: pass a valid Date or ISO-8601 string.`);
  }
  if (epochMs < MIN_STORABLE_DATE.getTime() || epochMs > MAX_STORABLE_DATE.getTime()) {
    throw new ValidationError(
      `${what} ${new Date(epochMs).toISOString()} is outside the instants Orrery can store (${MIN_STORABLE_DATE.toISOString()} to ${MAX_STORABLE_DATE.toISOString()}); pass a date within them.`,
    );
  }
  return epochMs;
}

/**
 * Checks that `date` is a valid Date both adapters can store (years 1 to 9999, UTC): the check
 * public inputs (schedule bounds, backfill ranges) run before anything is written, and the
 * adapters' codecs run on every instant they write.
 * @throws ValidationError naming `what`, the value and the range.
 */
export function assertStorableDate(date: Date, what = 'Date'): Date {
  if (!(date instanceof Date)) {
    throw new ValidationError(`${what} must be a Date, got ${JSON.stringify(date)}.`);
  }
  assertStorableMillis(date.getTime(), what);
  return date;
}

/**
 * A UTC instant with millisecond precision: Postgres `timestamptz`, SQLite INTEGER
 * milliseconds since the epoch. Values are truncated to milliseconds before they are written.
 */
export class UniversalTimestamp {
  /** Milliseconds since the Unix epoch, an integer. */
  readonly epochMs: number;

  private constructor(epochMs: number) {
    this.epochMs = epochMs;
  }

  /**
   * Wraps a Date, truncated to whole milliseconds.
   * @throws ValidationError for an invalid Date, or one outside the years 1 to 9999 (UTC) that
   *   every adapter stores.
   */
  static fromDate(date: Date): UniversalTimestamp {
    const ms = date.getTime();
    if (!Number.isFinite(ms)) throw new ValidationError('Invalid Date: pass a valid Date or ISO-8601 string.');
    return new UniversalTimestamp(Math.trunc(assertStorableMillis(ms)));
  }

  /**
   * Wraps epoch milliseconds, truncated to an integer.
   * @throws ValidationError for a count that is not finite or outside the years 1 to 9999 (UTC).
   */
  static fromMillis(epochMs: number): UniversalTimestamp {
    if (!Number.isFinite(epochMs)) throw new ValidationError(`${epochMs} is not a valid epoch millisecond count.`);
    return new UniversalTimestamp(Math.trunc(assertStorableMillis(epochMs)));
  }

  /** A new Date for this instant. */
  toDate(): Date {
    return new Date(this.epochMs);
  }

  /** ISO-8601 in UTC with milliseconds (`2026-01-02T03:04:05.678Z`). */
  toISOString(): string {
    return this.toDate().toISOString();
  }

  /** True when both denote the same millisecond. */
  equals(other: UniversalTimestamp): boolean {
    return this.epochMs === other.epochMs;
  }
}

/** `date` truncated to whole milliseconds (a copy). */
export function truncateToMillis(date: Date): Date {
  return UniversalTimestamp.fromDate(date).toDate();
}
