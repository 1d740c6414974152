import {
  assertNoNul,
  checkPage,
  ExecutionNotFoundError,
  type ExecutionStore,
  type ListExecutionsFilter,
  PIPELINE_STATUSES,
  type PipelineFilter,
  type PipelineRow,
  UniversalUuid,
  ValidationError,
} from '@orreryjs/core';

const KNOWN_STATUSES: ReadonlySet<string> = new Set(PIPELINE_STATUSES);

/** Page size of `listExecutions` when none is given, and the largest accepted. */
export const LIST_DEFAULT_LIMIT = 100;
export const LIST_MAX_LIMIT = 1000;

/**
 * A wait's time limit: `value` when given, else `fallback`. Any length is honoured (waits
 * past setTimeout's 2³¹ ms are chained timers).
 * @throws ValidationError unless it is a positive integer of milliseconds.
 */
export function checkTimeoutMs(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new ValidationError(`${name} must be a positive integer of milliseconds, got ${JSON.stringify(value)}.`);
  }
  return value;
}

/**
 * The store's filter for `listExecutions`, defaults filled in.
 * @throws ValidationError for an unknown status, or a limit or offset out of range.
 */
export function checkListFilter(filter: ListExecutionsFilter): PipelineFilter {
  const { workflowName, status, scheduleId } = filter;
  if (scheduleId !== undefined && (typeof scheduleId !== 'string' || !UniversalUuid.isUuid(scheduleId))) {
    throw new ValidationError(
      `scheduleId must be a schedule's id (a UUID), got ${JSON.stringify(scheduleId)}; getCronSchedule(name) gives the id of a named one.`,
    );
  }
  if (workflowName !== undefined && typeof workflowName !== 'string') {
    throw new ValidationError('workflowName must be a string.');
  }
  if (workflowName !== undefined) assertNoNul(workflowName, `workflowName ${JSON.stringify(workflowName)}`);
  if (status !== undefined && !KNOWN_STATUSES.has(status)) {
    throw new ValidationError(
      `status ${JSON.stringify(status)} is unknown; use one of ${PIPELINE_STATUSES.join(', ')}.`,
    );
  }
  return {
    ...checkPage(filter, { defaultLimit: LIST_DEFAULT_LIMIT, maxLimit: LIST_MAX_LIMIT }),
    ...(workflowName === undefined ? {} : { workflowName }),
    ...(status === undefined ? {} : { status }),
    ...(scheduleId === undefined ? {} : { scheduleId: scheduleId.toLowerCase() }),
  };
}

/** An id as stored (lower case); a string that is not a UUID names no execution. */
export function checkExecutionId(executionId: string): string {
  if (typeof executionId !== 'string' || !UniversalUuid.isUuid(executionId)) throw executionNotFound(executionId);
  return executionId.toLowerCase();
}

/** The fewest leading hex digits of an id that {@link executionIdPrefix} takes, as the dashboard shows. */
export const MIN_ID_PREFIX_DIGITS = 8;

const UUID_LAYOUT = 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx';

/**
 * The hex digits (lower case) of an execution id or of its start: at least
 * {@link MIN_ID_PREFIX_DIGITS} of them, with dashes where the UUID has them or none at all
 * (`1a2b3c4d`, `1a2b3c4d-5e6f`, a whole UUID); undefined for anything else.
 */
export function executionIdPrefix(text: string): string | undefined {
  const lower = text.trim().toLowerCase();
  const asLaidOut =
    lower.length <= UUID_LAYOUT.length &&
    [...lower].every((char, i) => (UUID_LAYOUT[i] === '-' ? char === '-' : /[0-9a-f]/.test(char)));
  const hex = asLaidOut ? lower.replaceAll('-', '') : /^[0-9a-f]{1,32}$/.test(lower) ? lower : '';
  return hex.length >= MIN_ID_PREFIX_DIGITS ? hex : undefined;
}

/** The error for an id that names no execution, saying what ids look like. */
export function executionNotFound(executionId: unknown): ExecutionNotFoundError {
  return new ExecutionNotFoundError(
    `No pipeline execution has id ${JSON.stringify(executionId)}; ids are UUIDs as returned by executeAsync() or listExecutions().`,
  );
}

/**
 * The pipeline row of an execution id.
 * @throws ExecutionNotFoundError for an unknown or malformed id.
 */
export async function readPipeline(store: ExecutionStore, executionId: string): Promise<PipelineRow> {
  const row = await store.getPipeline(checkExecutionId(executionId));
  if (row === null) throw executionNotFound(executionId);
  return row;
}
