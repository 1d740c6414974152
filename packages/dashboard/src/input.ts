import { MAX_NOTE_LENGTH } from '@orreryjs/cron';
import { type PipelineStatus, ValidationError } from '@orreryjs/runner';

/** The pipeline statuses a filter accepts. */
export const PIPELINE_STATUSES: readonly PipelineStatus[] = [
  'pending',
  'running',
  'paused',
  'completed',
  'failed',
  'cancelled',
];

/** The most rows one API call or page returns. */
export const MAX_LIMIT = 500;

/** A window of a list: `limit` rows from `offset`. */
export interface PageWindow {
  limit: number;
  offset: number;
}

function integer(name: string, text: string, min: number, max: number): number {
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ValidationError(`${name} must be a whole number from ${min} to ${max}; got "${text}".`);
  }
  return Number(text);
}

/**
 * `limit` and `offset` of an API query, or `page` (1-based) of a page's query, each checked.
 * @throws ValidationError for a value that is not a whole number in range.
 */
export function parseWindow(query: URLSearchParams, defaultLimit: number): PageWindow {
  const limitText = query.get('limit');
  const limit = limitText === null || limitText === '' ? defaultLimit : integer('limit', limitText, 1, MAX_LIMIT);
  const pageText = query.get('page');
  if (pageText !== null && pageText !== '') {
    return { limit, offset: (integer('page', pageText, 1, 1_000_000) - 1) * limit };
  }
  const offsetText = query.get('offset');
  const offset = offsetText === null || offsetText === '' ? 0 : integer('offset', offsetText, 0, 100_000_000);
  return { limit, offset };
}

/**
 * The `status` filter, if any.
 * @throws ValidationError for a value that is not a pipeline status.
 */
export function parseStatus(text: string | null): PipelineStatus | undefined {
  if (text === null || text === '') return undefined;
  if (!(PIPELINE_STATUSES as readonly string[]).includes(text)) {
    throw new ValidationError(`status must be one of ${PIPELINE_STATUSES.join(', ')}; got "${text}".`);
  }
  return text as PipelineStatus;
}

/**
 * An instant from a form or JSON body: an ISO-8601 string, or a `datetime-local` value read as UTC.
 * @throws ValidationError naming the field when the value is missing or not a date.
 */
export function parseInstant(name: string, value: unknown): Date {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ValidationError(`${name} is required: give an ISO-8601 date such as 2026-01-01T00:00:00Z.`);
  }
  const text = /T\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(value) ? `${value}Z` : value;
  const at = new Date(text);
  if (Number.isNaN(at.getTime())) {
    throw new ValidationError(`${name} "${value}" is not a date: give ISO-8601 such as 2026-01-01T00:00:00Z.`);
  }
  return at;
}

/**
 * An optional free-text field (a pause note or reason), at most {@link MAX_NOTE_LENGTH} characters.
 * @throws ValidationError for a non-string or an over-long value.
 */
export function parseText(name: string, value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' || value.length > MAX_NOTE_LENGTH) {
    throw new ValidationError(`${name} must be text of at most ${MAX_NOTE_LENGTH.toLocaleString('en')} characters.`);
  }
  return value;
}
