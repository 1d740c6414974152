import { ValidationError } from './errors.js';

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
   * @throws ValidationError for an invalid Date.
   */
  static fromDate(date: Date): UniversalTimestamp {
    const ms = date.getTime();
    if (!Number.isFinite(ms)) throw new ValidationError('Invalid Date: pass a valid Date or ISO-8601 string.');
    return new UniversalTimestamp(Math.trunc(ms));
  }

  /** Wraps epoch milliseconds, truncated to an integer. */
  static fromMillis(epochMs: number): UniversalTimestamp {
    if (!Number.isFinite(epochMs)) throw new ValidationError(`${epochMs} is not a valid epoch millisecond count.`);
    return new UniversalTimestamp(Math.trunc(epochMs));
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
