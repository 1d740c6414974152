import {
  assertContextSize,
  assertKnownKeys,
  assertNoNul,
  assertStorableDate,
  type CatchupPolicy,
  ContextError,
  hasNul,
  isJsonObject,
  type JsonObject,
  jsonByteLength,
  type OverlapPolicy,
  type ScheduleDst,
  toJson,
  UniversalUuid,
  ValidationError,
  WorkflowNotFoundError,
} from '@orreryjs/core';
import { parseExpressionFields } from './expression/cron-expression.js';
import { checkDst, resolveDstRules } from './expression/dst.js';
import { validateTimezone } from './expression/timezone.js';
import type { WorkflowCatalog } from './options.js';
import { occurrenceContext, recoveryContext } from './schedule-context.js';
import { CATCHUP_POLICIES, MAX_NOTE_LENGTH, OVERLAP_POLICIES, SCHEDULE_DEFAULTS } from './schedule-fields.js';
import type { CronScheduleInput } from './types.js';
import { firstRunAt } from './window.js';

/**
 * A schedule's definition after validation and normalisation: every field but `enabled`.
 * Two inputs with equal definitions describe the same schedule.
 */
export interface ScheduleDefinition {
  name: string;
  workflowName: string;
  /** Canonical text: 6 fields, 7 with a year, or `@every <duration>`. */
  cronExpression: string;
  /** Canonical zone name. */
  timezone: string;
  context: JsonObject;
  catchupPolicy: CatchupPolicy;
  overlapPolicy: OverlapPolicy;
  jitterMs: number;
  pauseOnFailure: boolean;
  maxRuns: number | null;
  /** Both rules filled in from the expression's defaults; null when the input gave none. */
  dst: ScheduleDst | null;
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

const MAX_NAME_LENGTH = 255;
/**
 * Every key a schedule input may have: anything else is a typo, refused rather than ignored.
 * Written as a record of every key of {@link CronScheduleInput}, so the compiler keeps the
 * list and the type the same.
 */
const INPUT_KEYS = Object.keys({
  name: true,
  workflowName: true,
  cronExpression: true,
  timezone: true,
  enabled: true,
  context: true,
  catchupPolicy: true,
  overlapPolicy: true,
  jitterMs: true,
  pauseOnFailure: true,
  maxRuns: true,
  dst: true,
  note: true,
  startAt: true,
  endAt: true,
} satisfies Record<keyof CronScheduleInput, true>) as readonly (keyof CronScheduleInput)[];
// Stands in for a schedule id when sizing the context before the schedule has one.
const SAMPLE_ID = '00000000-0000-4000-8000-000000000000';
// Stands in for an occurrence's time: every ISO time of a storable date has this length.
const SAMPLE_TIME = new Date(0);

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
): { definition: ScheduleDefinition; enabled: boolean; note: string | null | undefined } {
  if (typeof input !== 'object' || input === null) {
    throw new ValidationError(
      'A cron schedule input must be an object with at least name, workflowName and cronExpression.',
    );
  }
  assertKnownKeys(input, INPUT_KEYS, 'cron schedule field', 'fields');
  const workflowName = checkWorkflowName(input.workflowName, limits.workflows, checkWorkflow);
  if (typeof input.cronExpression !== 'string') {
    throw new ValidationError(
      `cronExpression must be a string such as '*/5 * * * *', got ${describe(input.cronExpression)}.`,
    );
  }
  withoutNul(input.cronExpression, () => `cronExpression ${describe(input.cronExpression)}`);
  const fields = parseExpressionFields(input.cronExpression);
  const cronExpression = fields.normalized;
  checkDst(input.dst);
  if (fields.kind === 'interval' && input.dst !== undefined && input.dst !== null) {
    // Refused rather than stored and ignored: the schedule would read as if dst applied.
    throw new ValidationError(
      `dst has no effect on "${cronExpression}": an @every interval is absolute, DST never moves it; leave dst out.`,
    );
  }
  const timezone = validateTimezone(checkString('timezone', input.timezone ?? SCHEDULE_DEFAULTS.timezone));
  const { startAt, endAt } = checkWindow(input.startAt, input.endAt);
  const definition: ScheduleDefinition = {
    name: checkName(input.name),
    workflowName,
    cronExpression,
    timezone,
    context: checkContext(input.context),
    catchupPolicy: checkChoice(
      'catchupPolicy',
      input.catchupPolicy ?? SCHEDULE_DEFAULTS.catchupPolicy,
      CATCHUP_POLICIES,
    ),
    overlapPolicy: checkChoice(
      'overlapPolicy',
      input.overlapPolicy ?? SCHEDULE_DEFAULTS.overlapPolicy,
      OVERLAP_POLICIES,
    ),
    jitterMs: checkJitter(input.jitterMs ?? SCHEDULE_DEFAULTS.jitterMs),
    pauseOnFailure: checkBoolean('pauseOnFailure', input.pauseOnFailure ?? SCHEDULE_DEFAULTS.pauseOnFailure),
    maxRuns: checkMaxRuns(input.maxRuns ?? SCHEDULE_DEFAULTS.maxRuns),
    dst: input.dst === undefined || input.dst === null ? null : resolveDstRules(fields.followsRealClock, input.dst),
    startAt,
    endAt,
  };
  assertOccurrenceContextSize(definition, limits);
  return {
    definition,
    enabled: checkBoolean('enabled', input.enabled ?? SCHEDULE_DEFAULTS.enabled),
    note: input.note === undefined ? undefined : checkNote(input.note),
  };
}

/**
 * The pipelines get the schedule keys on top of the context, and the recovery keys when a
 * lost occurrence is handed off again: refuses a context whose largest such form is over
 * `maxContextBytes`, so that a recovery is never refused for size after the first handoff
 * was accepted. The context's size plus that of the added keys alone is an upper bound (a
 * key of both is counted twice): only a context near the limit is merged and sized exactly,
 * so that a sync of 100,000 schedules builds no merged context per schedule.
 * @throws ContextError when it is over the limit.
 */
function assertOccurrenceContextSize(definition: ScheduleDefinition, limits: ValidationLimits): void {
  const { name, timezone, cronExpression, context } = definition;
  const keysBytes =
    ADDED_KEYS_BYTES +
    jsonByteLength(name) +
    jsonByteLength(timezone) +
    jsonByteLength(cronExpression) +
    jsonByteLength(limits.maxRecoveryAttempts);
  if (jsonByteLength(context) + keysBytes <= limits.maxContextBytes) return;
  const largest = recoveryContext(
    occurrenceContext({ id: SAMPLE_ID, name, timezone, cronExpression, context }, SAMPLE_TIME),
    limits.maxRecoveryAttempts,
  );
  assertContextSize(largest, limits.maxContextBytes, 'Schedule context (with the schedule and recovery keys)');
}

// The serialised size of the keys occurrenceContext and recoveryContext add, but for the
// values of name, timezone, expression and attempt (each an empty string or 0 here).
const ADDED_KEYS_BYTES =
  jsonByteLength(
    recoveryContext(
      occurrenceContext({ id: SAMPLE_ID, name: '', timezone: '', cronExpression: '', context: {} }, SAMPLE_TIME),
      0,
    ),
  ) -
  3 * jsonByteLength('') -
  jsonByteLength(0);

/**
 * Refuses a definition that would never fire from `now` on: its window ends before its first
 * occurrence (an `endAt` already past, a window between two occurrences), so adding it would
 * only store a schedule that silently does nothing.
 * @throws ValidationError naming the window and the expression.
 */
export function assertCanFire(definition: ScheduleDefinition, now: Date): void {
  if (firstRunAt(definition, now) !== null) return;
  const { cronExpression, timezone, startAt, endAt } = definition;
  if (endAt !== null && endAt.getTime() <= now.getTime()) {
    throw new ValidationError(
      `endAt ${endAt.toISOString()} is already past (now is ${now.toISOString()}), so schedule "${definition.name}" would never fire; move endAt into the future or leave it out.`,
    );
  }
  const fields = parseExpressionFields(cronExpression);
  const lastYear = fields.kind === 'calendar' ? fields.years?.at(-1) : undefined;
  const window =
    endAt !== null
      ? `before endAt ${endAt.toISOString()}`
      : lastYear === undefined
        ? 'in the next nine years'
        : `up to the end of its last year, ${lastYear}`;
  const from = startAt !== null && startAt.getTime() > now.getTime() ? `startAt ${startAt.toISOString()}` : 'now';
  throw new ValidationError(
    `Schedule "${definition.name}" would never fire: "${cronExpression}" in ${timezone} has no occurrence from ${from} ${window}; widen the window or change the expression.`,
  );
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

function checkName(value: unknown): string {
  if (value === undefined || value === null) {
    throw new ValidationError(
      'A cron schedule needs a name (such as "nightly-report"): re-adding a named schedule at start-up returns the existing one, where an unnamed one would be added again each time.',
    );
  }
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
  assertStorableDate(value, field);
  return new Date(Math.trunc(value.getTime()));
}

/**
 * A schedule's note: free text of at most 1000 characters; null clears it.
 * @throws ValidationError for anything else.
 */
export function checkNote(value: unknown): string | null {
  if (value === null) return null;
  if (typeof value !== 'string' || value.length > MAX_NOTE_LENGTH) {
    throw new ValidationError(
      `note must be a string of at most ${MAX_NOTE_LENGTH} characters, got ${describe(value)}.`,
    );
  }
  return withoutNul(value, () => `note ${describe(value)}`);
}

function checkMaxRuns(value: unknown): number | null {
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ValidationError(`maxRuns must be a positive integer or null (no limit), got ${describe(value)}.`);
  }
  return value;
}

function checkJitter(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError(`jitterMs must be a non-negative integer of milliseconds, got ${describe(value)}.`);
  }
  return value;
}

export function checkChoice<T extends string>(field: string, value: unknown, choices: readonly T[]): T {
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
  return withoutNul(value, () => `${field} ${describe(value)}`);
}

/** `text`, checked by assertNoNul; `what` names it, built only for the error (a sync checks 100,000 names). */
function withoutNul(text: string, what: () => string): string {
  return hasNul(text) ? assertNoNul(text, what()) : text;
}

export function checkBoolean(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new ValidationError(`${field} must be true or false, got ${describe(value)}.`);
  return value;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value instanceof Date) return `Date(${value.getTime()})`;
  return typeof value === 'object' && value !== null ? 'an object' : String(value);
}

/** Options of a manual trigger, after validation. */
export interface TriggerOptions {
  /** `'allow'`: start now whatever the schedule's overlap policy. */
  overlapPolicy?: 'allow';
}

/**
 * Checks the options of `triggerCronSchedule`: absent, or an object whose only key is
 * `overlapPolicy: 'allow'`. Returns whether the trigger is forced past the overlap policy.
 * @throws ValidationError naming the unknown key or the bad value.
 */
export function validateTriggerOptions(options: unknown): boolean {
  if (options === undefined) return false;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(
      `Trigger options must be an object such as { overlapPolicy: 'allow' }, got ${describe(options)}.`,
    );
  }
  for (const key of Object.keys(options)) {
    if (key !== 'overlapPolicy') {
      throw new ValidationError(`Unknown trigger option "${key}"; the only one is overlapPolicy ('allow').`);
    }
  }
  const policy = (options as TriggerOptions).overlapPolicy;
  if (policy !== undefined && policy !== 'allow') {
    throw new ValidationError(
      `overlapPolicy of a trigger must be 'allow' (start now whatever the schedule's policy) or absent (follow it), got ${describe(policy)}.`,
    );
  }
  return policy === 'allow';
}
