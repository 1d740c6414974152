import { createHash } from 'node:crypto';
import { ValidationError, WorkflowValidationError } from './errors.js';
import type { JsonObject } from './json.js';
import { hasNul } from './text.js';

/*
 * Flow control's model: the rules a workflow declares, the groups a pipeline joins, and
 * why a pipeline waits. Each rule and each default lives here; the adapters enforce the
 * groups in the database, so that the limits hold across every runner.
 */

/** What happens to a pipeline created while its group is full. */
export type OnLimit = 'queue' | 'cancel_newest' | 'cancel_in_progress';

/** At most `limit` pipelines of one group active at once (DESIGN.md "Flow control"). */
export interface ConcurrencyRule {
  /**
   * Context path (dots for nesting: `tenant.id`) whose value names the group; absent: the
   * whole workflow is one group. A missing value is the group ''.
   */
  key?: string;
  /** Integer 1..100,000: pipelines of one group active at once. */
  limit: number;
  /** @default 'queue' */
  onLimit?: OnLimit;
}

/**
 * At most `limit` starts of task attempts per sliding window of `periodMs`, counted in the
 * database across every runner, per bucket: `name`, or `name/<value>` with a `key`.
 */
export interface RateLimit {
  /** A bucket shared by every task and workflow that names it. */
  name: string;
  /** Context path: one bucket per (name, value). */
  key?: string;
  /** Integer 1..1,000,000: starts per window. */
  limit: number;
  /** The window, in milliseconds: an integer from 1 to 366 days. */
  periodMs: number;
}

/** A concurrency group a pipeline belongs to, as stored with it: the group's name and its rule. */
export interface PipelineGroup {
  /** `<workflow>` for a workflow-wide rule, `<workflow>/<key>=<value>` for a keyed one. */
  group: string;
  limit: number;
  onLimit: OnLimit;
}

/** Why a pending pipeline has not started (null when nothing holds it back). */
export type WaitingFor =
  | { kind: 'runAt'; runAt: Date }
  | { kind: 'concurrency'; group: string; active: number; limit: number };

/** The priority of a pipeline whose workflow and options name none. */
export const DEFAULT_PRIORITY = 0;
/** The range of `priority` (workflow and ExecuteOptions). */
export const PRIORITY_RANGE = Object.freeze({ min: -1000, max: 1000 });
/** The largest `limit` of a rate limit. */
export const MAX_RATE_LIMIT = 1_000_000;
/** The longest `periodMs` of a rate limit: 366 days. */
export const MAX_RATE_PERIOD_MS = 366 * 24 * 3_600_000;
/** The longest rate-limit `name`, in characters. */
const MAX_RATE_NAME_CHARS = 200;
const RATE_LIMIT_KEYS = ['name', 'key', 'limit', 'periodMs'];
/** The largest concurrency `limit`. */
export const MAX_CONCURRENCY_LIMIT = 100_000;
/** The longest `concurrencyKey`, in UTF-8 bytes (an idempotency key's bound). */
export const MAX_CONCURRENCY_KEY_BYTES = 1024;
/** @default of {@link ConcurrencyRule.onLimit} */
export const DEFAULT_ON_LIMIT: OnLimit = 'queue';
const ON_LIMITS: readonly OnLimit[] = ['queue', 'cancel_newest', 'cancel_in_progress'];
const RULE_KEYS = ['key', 'limit', 'onLimit'];
/** A context path: names without dots or blanks, joined by dots. */
const CONTEXT_PATH = /^[^.\s]+(\.[^.\s]+)*$/;
/**
 * A group value longer than this is shortened to a prefix and a hash of the whole: the name
 * stays readable and short enough for a B-tree key, and distinct values stay distinct.
 */
const GROUP_VALUE_CHARS = 128;

/** Checks a rule's `key`: absent, or a context path (dots for nesting). */
function checkKeyPath(where: string, key: unknown): void {
  if (key !== undefined && !(typeof key === 'string' && CONTEXT_PATH.test(key) && !hasNul(key))) {
    throw new WorkflowValidationError(
      `${where}.key must be a context path such as "customerId" or "tenant.id", got ${JSON.stringify(key)}.`,
    );
  }
}

/**
 * Checks a workflow's `concurrency` (one rule or an array of them) and fills in the defaults.
 * @throws WorkflowValidationError naming the workflow, the rule and the field.
 */
export function checkConcurrencyRules(workflowName: string, value: unknown): ConcurrencyRule[] {
  if (value === undefined) return [];
  const rules = Array.isArray(value) ? value : [value];
  const seen = new Set<string>();
  return rules.map((rule: unknown, index) => {
    const where = `Workflow "${workflowName}": concurrency${Array.isArray(value) ? `[${index}]` : ''}`;
    if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) {
      throw new WorkflowValidationError(`${where} must be an object such as { key: 'customerId', limit: 2 }.`);
    }
    for (const field of Object.keys(rule)) {
      if (!RULE_KEYS.includes(field)) {
        throw new WorkflowValidationError(
          `${where} has unknown field "${field}"; the fields are ${RULE_KEYS.join(', ')}.`,
        );
      }
    }
    const { key, limit, onLimit } = rule as ConcurrencyRule;
    checkKeyPath(where, key);
    if (!(typeof limit === 'number' && Number.isSafeInteger(limit) && limit >= 1 && limit <= MAX_CONCURRENCY_LIMIT)) {
      throw new WorkflowValidationError(
        `${where}.limit must be an integer from 1 to ${MAX_CONCURRENCY_LIMIT}, got ${JSON.stringify(limit) ?? String(limit)}.`,
      );
    }
    if (onLimit !== undefined && !ON_LIMITS.includes(onLimit)) {
      throw new WorkflowValidationError(
        `${where}.onLimit must be one of ${ON_LIMITS.join(', ')}, got ${JSON.stringify(onLimit)}.`,
      );
    }
    // Two rules on one key would be one group with two limits: the smaller is the only one that counts.
    const identity = key ?? '';
    if (seen.has(identity)) {
      throw new WorkflowValidationError(
        `${where} repeats the ${key === undefined ? 'workflow-wide rule' : `key "${key}"`}; keep one rule per key.`,
      );
    }
    seen.add(identity);
    return { ...(key === undefined ? {} : { key }), limit, onLimit: onLimit ?? DEFAULT_ON_LIMIT };
  });
}

/**
 * Checks a task's `rateLimit`.
 * @throws WorkflowValidationError naming the workflow, the task and the field.
 */
export function checkRateLimit(workflowName: string, taskId: string, value: unknown): RateLimit | undefined {
  if (value === undefined) return undefined;
  const where = `Workflow "${workflowName}": task "${taskId}" rateLimit`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new WorkflowValidationError(
      `${where} must be an object such as { name: 'crm-api', limit: 10, periodMs: 1000 }.`,
    );
  }
  for (const field of Object.keys(value)) {
    if (!RATE_LIMIT_KEYS.includes(field)) {
      throw new WorkflowValidationError(
        `${where} has unknown field "${field}"; the fields are ${RATE_LIMIT_KEYS.join(', ')}.`,
      );
    }
  }
  const { name, key, limit, periodMs } = value as RateLimit;
  if (typeof name !== 'string' || name.trim() === '' || hasNul(name) || name.length > MAX_RATE_NAME_CHARS) {
    throw new WorkflowValidationError(
      `${where}.name must be a non-empty string of at most ${MAX_RATE_NAME_CHARS} characters without NUL, got ${JSON.stringify(name) ?? String(name)}.`,
    );
  }
  checkKeyPath(where, key);
  if (!(typeof limit === 'number' && Number.isSafeInteger(limit) && limit >= 1 && limit <= MAX_RATE_LIMIT)) {
    throw new WorkflowValidationError(
      `${where}.limit must be an integer from 1 to ${MAX_RATE_LIMIT}, got ${JSON.stringify(limit) ?? String(limit)}.`,
    );
  }
  if (
    !(typeof periodMs === 'number' && Number.isSafeInteger(periodMs) && periodMs >= 1 && periodMs <= MAX_RATE_PERIOD_MS)
  ) {
    throw new WorkflowValidationError(
      `${where}.periodMs must be an integer of milliseconds from 1 to ${MAX_RATE_PERIOD_MS}, got ${JSON.stringify(periodMs) ?? String(periodMs)}.`,
    );
  }
  return { name, ...(key === undefined ? {} : { key }), limit, periodMs };
}

/** The bucket an attempt of a task with `rule` counts in: its name, and the value its key reads from the context. */
export function rateLimitBucket(rule: RateLimit, context: JsonObject): string {
  return rule.key === undefined ? rule.name : `${rule.name}/${rule.key}=${groupValue(readPath(context, rule.key))}`;
}

/**
 * Checks a priority: `where` names it in the message (`Workflow "x": priority`,
 * `ExecuteOptions.priority`) and `error` is the class raised.
 */
export function checkPriority(
  value: unknown,
  where: string,
  error: new (message: string) => ValidationError = ValidationError,
): number {
  if (value === undefined) return DEFAULT_PRIORITY;
  if (
    !(
      typeof value === 'number' &&
      Number.isSafeInteger(value) &&
      value >= PRIORITY_RANGE.min &&
      value <= PRIORITY_RANGE.max
    )
  ) {
    throw new error(
      `${where} must be an integer from ${PRIORITY_RANGE.min} to ${PRIORITY_RANGE.max} (higher is claimed first), got ${JSON.stringify(value) ?? String(value)}.`,
    );
  }
  return value;
}

/** @throws ValidationError unless `value` is undefined or a string without NUL of at most MAX_CONCURRENCY_KEY_BYTES bytes. */
export function checkConcurrencyKey(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || hasNul(value) || Buffer.byteLength(value, 'utf8') > MAX_CONCURRENCY_KEY_BYTES) {
    throw new ValidationError(
      `ExecuteOptions.concurrencyKey must be a string without NUL characters of at most ${MAX_CONCURRENCY_KEY_BYTES} bytes, got ${JSON.stringify(value) ?? String(value)}.`,
    );
  }
  return value;
}

/**
 * The groups a new pipeline joins: one per rule, named by the value its key reads from the
 * input (or `concurrencyKey`, which overrides the value of every keyed rule).
 */
export function concurrencyGroups(
  workflowName: string,
  rules: readonly ConcurrencyRule[],
  input: JsonObject,
  concurrencyKey?: string,
): PipelineGroup[] {
  return rules.map((rule) => ({
    group:
      rule.key === undefined
        ? workflowName
        : `${workflowName}/${rule.key}=${groupValue(concurrencyKey ?? readPath(input, rule.key))}`,
    limit: rule.limit,
    onLimit: rule.onLimit ?? DEFAULT_ON_LIMIT,
  }));
}

/** The value at a dotted path of the context, or undefined where the path ends early. */
function readPath(input: JsonObject, path: string): unknown {
  let value: unknown = input;
  for (const name of path.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

/** A context value as a group's name: strings as they are, a missing value as '', others as JSON. */
function groupValue(value: unknown): string {
  const text = value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  if (text.length <= GROUP_VALUE_CHARS) return text;
  return `${text.slice(0, GROUP_VALUE_CHARS / 2)}…#${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
}

/** The error of a pipeline `cancel_newest` refused: its group was full. */
export function limitReachedError(group: string): string {
  return `concurrency limit ${group} reached`;
}

/** The error of the pipeline `cancel_in_progress` cancelled to make room for a newer one. */
export function replacedError(group: string): string {
  return `cancelled for a newer pipeline: concurrency limit ${group} reached (onLimit: cancel_in_progress)`;
}

/**
 * How much longer than its `periodMs` a start counts in its bucket: the time between the count
 * and the task's first instruction varies by a few milliseconds (a commit, a GC pause), and
 * without this margin two starts counted a full period apart could reach the task's code, or
 * the API it calls, slightly less than a period apart.
 */
export const RATE_LIMIT_GUARD_MS = 25;

/** How long a start counts in its bucket: its period and the guard. */
export function rateWindowMs(rule: Pick<RateLimit, 'periodMs'>): number {
  return rule.periodMs + RATE_LIMIT_GUARD_MS;
}

/**
 * When a task given back by a full bucket may be claimed again: `roomAt` (the instant the
 * bucket has room for one more start), a period later for each `limit` of tasks already given
 * back for that same instant (`herd`: how many), so that a backlog is not claimed whole at
 * every instant of room.
 */
export function deferredUntil(roomAt: Date, herd: number, rule: Pick<RateLimit, 'limit' | 'periodMs'>): Date {
  return new Date(roomAt.getTime() + Math.floor(herd / rule.limit) * rateWindowMs(rule));
}
