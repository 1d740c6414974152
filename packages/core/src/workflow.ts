import { createHash } from 'node:crypto';
import type { Context } from './context.js';
import { WorkflowValidationError } from './errors.js';
import {
  type ConcurrencyRule,
  checkConcurrencyRules,
  checkPriority,
  checkRateLimit,
  type RateLimit,
} from './flow-control.js';
import type { Json } from './json.js';
import type { RetryPolicy } from './retry.js';
import { assertKnownKeys } from './suggest.js';
import { hasNul } from './text.js';

/** When a task runs, judged from the terminal states of its dependencies. */
export type TriggerRule = 'all_success' | 'all_done' | 'one_success' | 'one_failed' | 'none_failed';

/** What a running task is told about itself. */
export interface TaskRunInfo {
  executionId: string;
  workflowName: string;
  taskId: string;
  /** 1-based: 2 means the first attempt failed or its runner died. */
  attempt: number;
  /** Aborted on timeout, cancel, pause, lost lease or shutdown. */
  signal: AbortSignal;
  /** Set when a cron occurrence started the pipeline. */
  scheduledTime?: Date;
  /** An instance of a map task: its item, as `map` returned it. */
  item?: Json;
  /** An instance of a map task: its item's position in the list, from 0. */
  index?: number;
}

/** One node of a workflow's DAG. */
export interface TaskDefinition {
  /** Unique in its workflow, matching /^[A-Za-z_][A-Za-z0-9_.-]*$/. */
  id: string;
  /** Ids of the tasks that must be terminal before this one is considered. */
  dependsOn?: string[];
  /**
   * The work. Writes to `ctx` become the task's output when the attempt succeeds. Every task
   * has one, except a wait task (`waitFor`), which has none. What it returns is ignored, except
   * in an instance of a map task: there it is the instance's result (JSON; `undefined` is null).
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: run returns nothing (void), or an instance's result.
  run?: (ctx: Context, info: TaskRunInfo) => Promise<Json | void> | Json | void;
  /** Retries after a failed attempt. */
  retry?: RetryPolicy;
  /**
   * Per-attempt time limit in milliseconds: a positive integer (any length: a 30-day limit
   * waits 30 days), or `Infinity` for no time limit at all (the attempt runs until it settles,
   * is cancelled or paused, or its runner shuts down or loses the lease).
   * @default the runner's taskTimeoutMs
   */
  timeoutMs?: number;
  /** @default 'all_success' */
  trigger?: TriggerRule;
  /** Returning false skips the task. */
  when?: (ctx: Context) => boolean;
  /**
   * A durable sleep: the task starts no earlier than `delayMs` after it becomes ready (its
   * dependencies done; a first task: its pipeline's start, or its admission to a concurrency
   * group). A positive integer of milliseconds, at most MAX_TASK_DELAY_MS. No slot, lease or
   * process is held while it waits.
   */
  delayMs?: number;
  /**
   * At most `limit` starts per `periodMs` across every runner, in the bucket `name` (per
   * context value with `key`). An attempt over its bucket does not start: the task stays
   * `ready` with a later availableAt, using no attempt and holding no slot.
   */
  rateLimit?: RateLimit;
  /**
   * Reads from the context the instant before which the task must not start (null: no such
   * instant). Called when an attempt is about to start; an instant ahead gives the task back
   * unstarted until then (no attempt used, no slot held), a past one or null runs it.
   */
  notBefore?: (ctx: Context) => Date | null;
  /**
   * A wait task: no `run`; it completes when `signal(executionId, signal, payload)` arrives
   * (before or after it became ready), its output setting the context key named by the task id
   * to the payload (null when none). After `timeoutMs` without it (a positive integer of
   * milliseconds, at most 366 days; none: it waits as long as it takes) it fails with
   * SignalTimeoutError, never retried. No slot, lease or process is held while it waits.
   */
  waitFor?: WaitFor;
  /**
   * Fan-out: called once, when the task becomes ready, on the worker that claims it; `run` then
   * runs once per item (`info.item`, `info.index`), each an instance with its own attempts,
   * lease, retries and time limit, `ctx` read-only. The task's output sets its id to the
   * instances' return values (JSON, `undefined` as null) in item order. At most MAX_MAP_ITEMS items.
   */
  map?: (ctx: Context) => Json[];
}

/** What a wait task waits for (see {@link TaskDefinition.waitFor}). */
export interface WaitFor {
  /** The signal's name: 1 to 200 characters, no NUL. */
  signal: string;
  timeoutMs?: number;
}

/** A validated workflow: its tasks in canonical (topological, then declaration) order. */
export interface Workflow {
  readonly name: string;
  readonly description?: string;
  /** Stable hash of the structure (ids, dependencies, triggers, retry policies, flow-control rules). */
  readonly version: string;
  /** Its concurrency rules, defaults filled in; empty when it has none. */
  readonly concurrency: readonly ConcurrencyRule[];
  /** The priority of its pipelines unless ExecuteOptions names one. */
  readonly priority: number;
  /** Tasks in canonical order: topological, ties broken by position in the definition. */
  readonly tasks: readonly TaskDefinition[];
  /** Task lookup by id. */
  readonly taskById: ReadonlyMap<string, TaskDefinition>;
  /** Direct dependents of each task id. */
  readonly dependents: ReadonlyMap<string, readonly string[]>;
  /** Transitive ancestors of each task id, in canonical order. */
  readonly ancestors: ReadonlyMap<string, readonly string[]>;
}

/** The argument of {@link defineWorkflow}. */
export interface WorkflowDefinition {
  name: string;
  description?: string;
  tasks: TaskDefinition[];
  /** At most `limit` pipelines active at once, per group (see DESIGN.md "Flow control"). */
  concurrency?: ConcurrencyRule | ConcurrencyRule[];
  /** Integer -1000..1000: its pipelines' priority; higher is claimed first. @default 0 */
  priority?: number;
}

/** Every key of WorkflowDefinition: any other is refused (a typo would otherwise be ignored). */
const WORKFLOW_KEYS = Object.keys({
  name: true,
  description: true,
  tasks: true,
  concurrency: true,
  priority: true,
} satisfies Record<keyof WorkflowDefinition, true>);

/** Every key of TaskDefinition. */
const TASK_KEYS = Object.keys({
  id: true,
  dependsOn: true,
  run: true,
  retry: true,
  timeoutMs: true,
  trigger: true,
  when: true,
  delayMs: true,
  rateLimit: true,
  notBefore: true,
  waitFor: true,
  map: true,
} satisfies Record<keyof TaskDefinition, true>);

/** The longest signal name, in characters. */
export const MAX_SIGNAL_NAME_CHARS = 200;

/** Every key of RetryPolicy. */
const RETRY_KEYS = Object.keys({
  maxAttempts: true,
  backoff: true,
  initialDelayMs: true,
  maxDelayMs: true,
  jitter: true,
  retryOn: true,
} satisfies Record<keyof RetryPolicy, true>);

/** The longest `delayMs`: a year of 366 days. */
export const MAX_TASK_DELAY_MS = 366 * 24 * 3_600_000;

const TASK_ID = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const TRIGGERS = new Set<TriggerRule>(['all_success', 'all_done', 'one_success', 'one_failed', 'none_failed']);

const BACKOFFS = new Set<string>(['fixed', 'linear', 'exponential']);

/**
 * Validates a workflow and orders its tasks canonically.
 * @throws WorkflowValidationError for an empty workflow, a name or description with a NUL
 * character, a bad or duplicate task id, an unknown dependency, a malformed task field
 * (run, dependsOn, trigger, when, timeoutMs, retry and each of its fields: the message names
 * the task and the field), or a cycle (the message names the tasks on it).
 */
export function defineWorkflow(definition: WorkflowDefinition): Workflow {
  if (typeof definition !== 'object' || definition === null) {
    throw new WorkflowValidationError('defineWorkflow() takes an object { name, tasks }.');
  }
  const { name, description, tasks } = definition;
  if (typeof name !== 'string' || name.trim() === '') {
    throw new WorkflowValidationError('Workflow name must be a non-empty string.');
  }
  assertKnownKeys(definition, WORKFLOW_KEYS, `workflow "${name}" key`, 'keys', WorkflowValidationError);
  if (hasNul(name)) {
    throw new WorkflowValidationError(
      `Workflow name ${JSON.stringify(name)} contains a NUL character (\\u0000), which PostgreSQL cannot store; remove it.`,
    );
  }
  if (description !== undefined && (typeof description !== 'string' || hasNul(description))) {
    throw new WorkflowValidationError(
      `Workflow "${name}": description must be a string without NUL characters, got ${JSON.stringify(description)}.`,
    );
  }
  if (!Array.isArray(tasks) || tasks.length === 0) {
    throw new WorkflowValidationError(`Workflow "${name}" has no tasks; add at least one task.`);
  }
  const concurrency = checkConcurrencyRules(name, definition.concurrency);
  const priority = checkPriority(definition.priority, `Workflow "${name}": priority`, WorkflowValidationError);
  const taskById = indexTasks(name, tasks);
  const ordered = canonicalOrder(name, tasks, taskById);
  const dependents = new Map<string, string[]>(ordered.map((t) => [t.id, []]));
  for (const task of ordered) for (const dep of task.dependsOn ?? []) dependents.get(dep)?.push(task.id);
  return Object.freeze({
    name,
    ...(description === undefined ? {} : { description }),
    version: structureHash(ordered, concurrency, definition.priority),
    concurrency: Object.freeze(concurrency),
    priority,
    tasks: Object.freeze(ordered),
    taskById,
    dependents,
    ancestors: ancestorsOf(ordered),
  });
}

function indexTasks(name: string, tasks: TaskDefinition[]): Map<string, TaskDefinition> {
  const byId = new Map<string, TaskDefinition>();
  for (const task of tasks) {
    if (typeof task?.id !== 'string' || !TASK_ID.test(task.id)) {
      throw new WorkflowValidationError(
        `Workflow "${name}": task id ${JSON.stringify(task?.id)} is invalid; use letters, digits, "_", "." or "-", starting with a letter or "_".`,
      );
    }
    if (byId.has(task.id)) throw new WorkflowValidationError(`Workflow "${name}": duplicate task id "${task.id}".`);
    checkTask(name, task);
    byId.set(task.id, task);
  }
  for (const task of tasks) {
    for (const dep of task.dependsOn ?? []) {
      if (!byId.has(dep)) {
        throw new WorkflowValidationError(`Workflow "${name}": task "${task.id}" depends on unknown task "${dep}".`);
      }
    }
  }
  return byId;
}

/** Checks every field of one task but its id and the existence of its dependencies. */
function checkTask(name: string, task: TaskDefinition): void {
  const fail = (field: string, what: string, value: unknown): never => {
    throw new WorkflowValidationError(
      `Workflow "${name}": task "${task.id}" ${field} must be ${what}, got ${describe(value)}.`,
    );
  };
  assertKnownKeys(task, TASK_KEYS, `task "${task.id}" key in workflow "${name}"`, 'keys', WorkflowValidationError);
  if (task.waitFor !== undefined) {
    checkWaitFor(name, task);
  } else if (typeof task.run !== 'function') {
    throw new WorkflowValidationError(`Workflow "${name}": task "${task.id}" has no run function.`);
  }
  if (task.map !== undefined) {
    if (typeof task.map !== 'function') fail('map', 'a function (ctx) => items (an array of JSON values)', task.map);
    if (task.waitFor !== undefined) fail('map', 'absent on a wait task (waitFor), which has no run to map', task.map);
  }
  const { dependsOn, trigger, when, timeoutMs, retry, delayMs } = task;
  checkRateLimit(name, task.id, task.rateLimit);
  if (task.notBefore !== undefined && typeof task.notBefore !== 'function') {
    fail('notBefore', 'a function (ctx) => Date | null', task.notBefore);
  }
  if (delayMs !== undefined && !(isPositiveInteger(delayMs) && (delayMs as number) <= MAX_TASK_DELAY_MS)) {
    fail('delayMs', `a positive integer of milliseconds, at most ${MAX_TASK_DELAY_MS} (366 days)`, delayMs);
  }
  if (dependsOn !== undefined && (!Array.isArray(dependsOn) || dependsOn.some((dep) => typeof dep !== 'string'))) {
    fail('dependsOn', 'an array of task ids (strings)', dependsOn);
  }
  if (trigger !== undefined && !TRIGGERS.has(trigger)) {
    throw new WorkflowValidationError(
      `Workflow "${name}": task "${task.id}" has unknown trigger ${describe(trigger)}; use one of ${[...TRIGGERS].join(', ')}.`,
    );
  }
  if (when !== undefined && typeof when !== 'function') fail('when', 'a function (ctx) => boolean', when);
  if (timeoutMs !== undefined && !(timeoutMs === Number.POSITIVE_INFINITY || isPositiveInteger(timeoutMs))) {
    fail('timeoutMs', 'a positive integer of milliseconds, or Infinity for no time limit', timeoutMs);
  }
  if (retry === undefined) return;
  if (typeof retry !== 'object' || retry === null || Array.isArray(retry)) {
    fail('retry', 'an object such as { maxAttempts: 3 }', retry);
  }
  assertKnownKeys(
    retry,
    RETRY_KEYS,
    `retry key of task "${task.id}" in workflow "${name}"`,
    'keys',
    WorkflowValidationError,
  );
  const { maxAttempts, backoff, initialDelayMs, maxDelayMs, jitter, retryOn } = retry;
  if (maxAttempts !== undefined && !isPositiveInteger(maxAttempts)) {
    fail('retry.maxAttempts', 'a positive integer (total attempts, the first included)', maxAttempts);
  }
  if (backoff !== undefined && !BACKOFFS.has(backoff)) {
    fail('retry.backoff', `one of ${[...BACKOFFS].join(', ')}`, backoff);
  }
  for (const [field, value] of [
    ['retry.initialDelayMs', initialDelayMs],
    ['retry.maxDelayMs', maxDelayMs],
  ] as const) {
    if (value !== undefined && !(typeof value === 'number' && Number.isFinite(value) && value >= 0)) {
      fail(field, 'a finite number of milliseconds ≥ 0', value);
    }
  }
  if (jitter !== undefined && typeof jitter !== 'boolean') fail('retry.jitter', 'true or false', jitter);
  if (retryOn !== undefined && typeof retryOn !== 'function') {
    fail('retry.retryOn', 'a function (error) => boolean', retryOn);
  }
}

/** A wait task: a signal name, an optional timeout, and no code of its own to run. */
function checkWaitFor(name: string, task: TaskDefinition): void {
  const where = `Workflow "${name}": task "${task.id}"`;
  if (task.run !== undefined) {
    throw new WorkflowValidationError(
      `${where} has both waitFor and run; a wait task has no run function (it completes with the signal).`,
    );
  }
  const waitFor = task.waitFor as unknown;
  if (typeof waitFor !== 'object' || waitFor === null || Array.isArray(waitFor)) {
    throw new WorkflowValidationError(
      `${where} waitFor must be an object such as { signal: 'approved' }, got ${describe(waitFor)}.`,
    );
  }
  assertKnownKeys(
    waitFor,
    ['signal', 'timeoutMs'],
    `waitFor key of task "${task.id}" in workflow "${name}"`,
    'keys',
    WorkflowValidationError,
  );
  const { signal, timeoutMs } = waitFor as WaitFor;
  if (typeof signal !== 'string' || signal === '' || hasNul(signal) || signal.length > MAX_SIGNAL_NAME_CHARS) {
    throw new WorkflowValidationError(
      `${where} waitFor.signal must be a name of 1 to ${MAX_SIGNAL_NAME_CHARS} characters without NUL, got ${describe(signal)}.`,
    );
  }
  if (timeoutMs !== undefined && !(isPositiveInteger(timeoutMs) && timeoutMs <= MAX_TASK_DELAY_MS)) {
    throw new WorkflowValidationError(
      `${where} waitFor.timeoutMs must be a positive integer of milliseconds, at most ${MAX_TASK_DELAY_MS} (366 days), got ${describe(timeoutMs)}.`,
    );
  }
}

function isPositiveInteger(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function describe(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'function') return 'a function';
  if (value === undefined) return 'undefined';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return typeof value;
  }
}

/** Kahn's algorithm, always taking the earliest-declared ready task, so order is stable. */
function canonicalOrder(name: string, tasks: TaskDefinition[], byId: Map<string, TaskDefinition>): TaskDefinition[] {
  const remaining = new Map(tasks.map((t) => [t.id, new Set(t.dependsOn ?? [])]));
  const ordered: TaskDefinition[] = [];
  while (remaining.size > 0) {
    const next = tasks.find((t) => remaining.get(t.id)?.size === 0);
    if (next === undefined)
      throw new WorkflowValidationError(`Workflow "${name}" has a cycle: ${findCycle(remaining).join(' -> ')}.`);
    remaining.delete(next.id);
    for (const deps of remaining.values()) deps.delete(next.id);
    ordered.push(byId.get(next.id) as TaskDefinition);
  }
  return ordered;
}

/** Walks dependencies among the unordered tasks until one repeats: that loop is a cycle. */
function findCycle(remaining: Map<string, Set<string>>): string[] {
  const path: string[] = [];
  let current = remaining.keys().next().value as string;
  while (!path.includes(current)) {
    path.push(current);
    current = [...(remaining.get(current) ?? [])][0] as string;
  }
  return [...path.slice(path.indexOf(current)), current];
}

function ancestorsOf(ordered: TaskDefinition[]): Map<string, string[]> {
  const position = new Map(ordered.map((t, i) => [t.id, i]));
  const sets = new Map<string, Set<string>>();
  for (const task of ordered) {
    const set = new Set<string>();
    for (const dep of task.dependsOn ?? []) {
      set.add(dep);
      for (const a of sets.get(dep) ?? []) set.add(a);
    }
    sets.set(task.id, set);
  }
  const byPosition = (a: string, b: string) => (position.get(a) ?? 0) - (position.get(b) ?? 0);
  return new Map([...sets].map(([id, set]) => [id, [...set].sort(byPosition)]));
}

/**
 * The version: a hash of the structure. Flow-control rules join it only when present, so a
 * workflow without them keeps the version it had before they existed.
 */
function structureHash(
  ordered: TaskDefinition[],
  concurrency: ConcurrencyRule[],
  priority: number | undefined,
): string {
  const shape = ordered.map((t) => ({
    id: t.id,
    dependsOn: [...(t.dependsOn ?? [])].sort(),
    trigger: t.trigger ?? 'all_success',
    retry: t.retry ? { ...t.retry, retryOn: t.retry.retryOn ? 'custom' : undefined } : null,
    // JSON would write Infinity as null, the same as "no own limit": name it.
    timeoutMs: t.timeoutMs === Number.POSITIVE_INFINITY ? 'Infinity' : (t.timeoutMs ?? null),
    when: t.when ? 'custom' : null,
    // Only when set, so that tasks without a delay keep the versions they had.
    ...(t.delayMs === undefined ? {} : { delayMs: t.delayMs }),
    ...(t.rateLimit === undefined ? {} : { rateLimit: t.rateLimit }),
    ...(t.notBefore === undefined ? {} : { notBefore: 'custom' }),
    ...(t.waitFor === undefined ? {} : { waitFor: t.waitFor }),
    ...(t.map === undefined ? {} : { map: 'custom' }),
  }));
  const rules = {
    ...(concurrency.length === 0 ? {} : { concurrency }),
    ...(priority === undefined ? {} : { priority }),
  };
  const hashed = Object.keys(rules).length === 0 ? shape : { tasks: shape, ...rules };
  return createHash('sha256').update(JSON.stringify(hashed)).digest('hex').slice(0, 16);
}
