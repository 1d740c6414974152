import { ValidationError } from './errors.js';

/**
 * The largest `offset` any listing accepts, and the largest `limit` of one with no smaller
 * cap: the largest integer a number holds exactly. Both databases take it (Postgres `bigint`,
 * SQLite's 64-bit integer); a larger number such as 1e20 overflows both, so it is refused here
 * with the other bad pages rather than reaching the database as a `DatabaseError`.
 */
export const MAX_PAGE_VALUE = Number.MAX_SAFE_INTEGER;

/** A page of a listing, as its caller passed it (any value: it is checked). */
export interface PageInput {
  limit?: unknown;
  offset?: unknown;
}

/** A checked page. */
export interface Page {
  limit: number;
  offset: number;
}

/** What a listing allows: its page size when none is given and its largest one. */
export interface PageLimits {
  /** @default maxLimit (as many rows as allowed) */
  defaultLimit?: number;
  /** @default MAX_PAGE_VALUE */
  maxLimit?: number;
}

/**
 * The one check of every listing's paging (`listExecutions`, `listCronSchedules`,
 * `getCronExecutionHistory`), run before any query: `limit` an integer from 1 to the
 * listing's `maxLimit`, `offset` an integer from 0 to {@link MAX_PAGE_VALUE}; absent ones
 * take the listing's defaults (offset 0).
 * @throws ValidationError naming the value and the range it must be in.
 */
export function checkPage(page: PageInput, limits: PageLimits = {}): Page {
  const { maxLimit = MAX_PAGE_VALUE, defaultLimit = maxLimit } = limits;
  const { limit = defaultLimit, offset = 0 } = page;
  if (!isIntegerIn(limit, 1, maxLimit)) {
    throw new ValidationError(`limit must be an integer from 1 to ${maxLimit}, got ${describePageValue(limit)}.`);
  }
  if (!isIntegerIn(offset, 0, MAX_PAGE_VALUE)) {
    throw new ValidationError(
      `offset must be an integer from 0 to ${MAX_PAGE_VALUE} (Number.MAX_SAFE_INTEGER), got ${describePageValue(offset)}.`,
    );
  }
  return { limit, offset };
}

function isIntegerIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** A value as named in a paging error: numbers as written (NaN, 1e+21), strings quoted. */
function describePageValue(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return JSON.stringify(value);
  return value === null ? 'null' : `a ${typeof value}`;
}
