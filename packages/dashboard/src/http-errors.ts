import { isOrreryError } from '@orreryjs/runner';

const BAD_INPUT = new Set([
  'VALIDATION',
  'INVALID_CRON_EXPRESSION',
  'INVALID_TIMEZONE',
  'WORKFLOW_VALIDATION',
  'CONTEXT',
]);
const NOT_FOUND = new Set(['SCHEDULE_NOT_FOUND', 'EXECUTION_NOT_FOUND', 'WORKFLOW_NOT_FOUND']);
// SCHEDULE_OVERLAP: a trigger of a `skip` schedule while an occurrence is active (recorded skipped).
const CONFLICT = new Set(['SCHEDULE_CONFLICT', 'IDEMPOTENCY_CONFLICT', 'SCHEDULE_OVERLAP']);

/** An error as the API returns it: HTTP status and `{ error: { code, message } }`. */
export interface HttpError {
  status: 400 | 401 | 403 | 404 | 409 | 500;
  code: string;
  message: string;
}

/** Maps a thrown error to its HTTP answer: bad input 400, unknown 404, conflict 409, the rest 500. */
export function toHttpError(err: unknown): HttpError {
  if (isOrreryError(err)) {
    const status = BAD_INPUT.has(err.code) ? 400 : NOT_FOUND.has(err.code) ? 404 : CONFLICT.has(err.code) ? 409 : 500;
    return { status, code: err.code, message: err.message };
  }
  return { status: 500, code: 'INTERNAL', message: err instanceof Error ? err.message : String(err) };
}
