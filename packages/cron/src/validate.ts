import {
  assertContextSize,
  assertNoNul,
  type CatchupPolicy,
  ContextError,
  isJsonObject,
  type JsonObject,
  type OverlapPolicy,
  toJson,
  UniversalUuid,
  ValidationError,
  WorkflowNotFoundError,
} from '@orreryjs/core';
import { normalizeCronExpression } from './cron-expression.js';
import type { WorkflowCatalog } from './options.js';
import { occurrenceContext, recoveryContext } from './schedule-context.js';
import { validateTimezone } from './timezone.js';
import type { CronScheduleInput } from './types.js';

/**
 * A schedule's definition after validation and normalisation: every field but `enabled`.
 * Two inputs with equal definitions describe the same schedule.
 */
export interface ScheduleDefinition {
  name: string | null;
  workflowName: string;
  /** Canonical 6-field text. */
  cronExpression: string;
  /** Canonical zone name. */
  timezone: string;
  context: JsonObject;
  catchupPolicy: CatchupPolicy;
  overlapPolicy: OverlapPolicy;
  jitterMs: number;
  startAt: Date | null;
  endAt: Date | null;
}

/** What the checks need to know about the process. */
export interface ValidationLimits {
  workflows: WorkflowCatalog;
  maxContextBytes: number;
  /** The largest `recovery_attempt` a recovery handoff adds to the context. */
  maxRecoveryAttempts: number;
}

const CATCHUP_POLICIES: readonly CatchupPolicy[] = ['skip', 'run_once', 'run_all'];
const OVERLAP_POLICIES: readonly OverlapPolicy[] = ['allow', 'skip'];
const MAX_NAME_LENGTH = 255;
// Stands in for a schedule id when sizing the context before the schedule has one.
const SAMPLE_ID = '00000000-0000-4000-8000-000000000000';

/**
 * Checks a whole schedule input and returns its normalised definition and `enabled` flag.
 * Runs before any write, so bad input is refused whole.
 * @throws ValidationError (or its subclasses InvalidCronExpressionError, InvalidTimezoneError,
 *   ContextError) naming the field at fault.
 * @throws WorkflowNotFoundError when `checkWorkflow` and the workflow is not registered.
 */
export function validateScheduleInput(
  input: CronScheduleInput,
  limits: ValidationLimits,
  checkWorkflow = true,
): { definition: ScheduleDefinition; enabled: boolean } {
  if (typeof input !== 'object' || input === null) {
    throw new ValidationError('A cron schedule input must be an object with at least workflowName and cronExpression.');
  }
  const workflowName = checkWorkflowName(input.workflowName, limits.workflows, checkWorkflow);
  if (typeof input.cronExpression !== 'string') {
    throw new ValidationError(
      `cronExpression must be a string such as '*/5 * * * *', got ${describe(input.cronExpression)}.`,
    );
  }
  assertNoNul(input.cronExpression, `cronExpression ${describe(input.cronExpression)}`);
  const cronExpression = normalizeCronExpression(input.cronExpression);
  const timezone = validateTimezone(checkString('timezone', input.timezone ?? 'UTC'));
  const { startAt, endAt } = checkWindow(input.startAt, input.endAt);
  const definition: ScheduleDefinition = {
    name: checkName(input.name),
    workflowName,
    cronExpression,
    timezone,
    context: checkContext(input.context),
    catchupPolicy: checkChoice('catchupPolicy', input.catchupPolicy ?? 'run_once', CATCHUP_POLICIES),
    overlapPolicy: checkChoice('overlapPolicy', input.overlapPolicy ?? 'allow', OVERLAP_POLICIES),
    jitterMs: checkJitter(input.jitterMs ?? 0),
    startAt,
    endAt,
  };
  // The pipelines get the schedule keys on top of the context, and the recovery keys when a
  // lost occurrence is handed off again: size the largest context they will see, so that a
  // recovery is never refused for size after the first handoff was accepted.
  const largest = recoveryContext(
    occurrenceContext({ ...definition, id: SAMPLE_ID }, new Date(0)),
    limits.maxRecoveryAttempts,
  );
  assertContextSize(largest, limits.maxContextBytes, 'Schedule context (with the schedule and recovery keys)');
  return { definition, enabled: checkBoolean('enabled', input.enabled ?? true) };
}

/**
 * Checks an `{ start, end }` range of a backfill.
 * @throws ValidationError unless both are valid Dates with start < end ≤ now.
 */
export function validateBackfillRange(range: { start: Date; end: Date }, now: Date): void {
  if (typeof range !== 'object' || range === null) {
    throw new ValidationError('A backfill range must be an object { start: Date, end: Date }.');
  }
  const start = checkDate('start', range.start);
  const end = checkDate('end', range.end);
  if (start === null || end === null) throw new ValidationError('A backfill range needs both start and end Dates.');
  if (start.getTime() >= end.getTime()) {
    throw new ValidationError(
      `Backfill start ${start.toISOString()} must be before end ${end.toISOString()} (the range is [start, end)).`,
    );
  }
  if (end.getTime() > now.getTime()) {
    throw new ValidationError(
      `Backfill end ${end.toISOString()} is in the future (now is ${now.toISOString()}); a backfill only covers the past, the scheduler fires the rest.`,
    );
  }
}

/**
 * Checks a `limit`/`offset` pair of a listing call.
 * @throws ValidationError unless limit is a positive integer and offset a non-negative one.
 */
export function validatePage(limit: number, offset: number): void {
  if (!Number.isSafeInteger(limit) || limit <= 0) {
    throw new ValidationError(`limit must be a positive integer, got ${describe(limit)}.`);
  }
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new ValidationError(`offset must be a non-negative integer, got ${describe(offset)}.`);
  }
}

function checkWorkflowName(value: unknown, workflows: WorkflowCatalog, checkRegistered: boolean): string {
  const name = checkString('workflowName', value);
  if (checkRegistered && !workflows.has(name)) {
    const known = workflows.names();
    const listed = known.length === 0 ? 'none is registered' : `registered: ${known.join(', ')}`;
    throw new WorkflowNotFoundError(
      `Workflow "${name}" is not registered (${listed}); register it with runner.register(workflow) before scheduling it.`,
    );
  }
  return name;
}

function checkName(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  const name = checkString('name', value);
  if (name.trim() !== name || name.length > MAX_NAME_LENGTH) {
    throw new ValidationError(
      `Schedule name ${JSON.stringify(name)} must have no leading or trailing spaces and at most ${MAX_NAME_LENGTH} characters.`,
    );
  }
  if (UniversalUuid.isUuid(name)) {
    throw new ValidationError(
      `Schedule name "${name}" is shaped like a UUID, which would read as an id; choose a descriptive name such as "nightly-report".`,
    );
  }
  return name;
}

function checkContext(value: unknown): JsonObject {
  if (value === undefined) return {};
  const context = toJson(value, 'context');
  if (!isJsonObject(context)) {
    throw new ContextError(`Schedule context must be a plain object of JSON values, got ${describe(value)}.`);
  }
  return context;
}

function checkWindow(startValue: unknown, endValue: unknown): { startAt: Date | null; endAt: Date | null } {
  const startAt = checkDate('startAt', startValue);
  const endAt = checkDate('endAt', endValue);
  if (startAt !== null && endAt !== null && startAt.getTime() >= endAt.getTime()) {
    throw new ValidationError(
      `startAt ${startAt.toISOString()} must be before endAt ${endAt.toISOString()}: the active window is [startAt, endAt).`,
    );
  }
  return { startAt, endAt };
}

function checkDate(field: string, value: unknown): Date | null {
  if (value === undefined || value === null) return null;
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new ValidationError(`${field} must be a valid Date, got ${describe(value)}.`);
  }
  return new Date(Math.trunc(value.getTime()));
}

function checkJitter(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError(`jitterMs must be a non-negative integer of milliseconds, got ${describe(value)}.`);
  }
  return value;
}

function checkChoice<T extends string>(field: string, value: unknown, choices: readonly T[]): T {
  if (!choices.includes(value as T)) {
    const allowed = choices.map((choice) => `'${choice}'`).join(', ');
    throw new ValidationError(`${field} must be one of ${allowed}, got ${describe(value)}.`);
  }
  return value as T;
}

/** A non-empty string PostgreSQL can store (no NUL character). */
function checkString(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new ValidationError(`${field} must be a non-empty string, got ${describe(value)}.`);
  }
  return assertNoNul(value, `${field} ${describe(value)}`);
}

function checkBoolean(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new ValidationError(`${field} must be true or false, got ${describe(value)}.`);
  return value;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value instanceof Date) return `Date(${value.getTime()})`;
  return typeof value === 'object' && value !== null ? 'an object' : String(value);
}
