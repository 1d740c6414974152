import { context as otelContext, type Span } from '@opentelemetry/api';
import {
  type ClaimedTask,
  type Clock,
  Context,
  checkMapItems,
  type ExecutionStore,
  type FinishTaskRequest,
  type FinishTaskResult,
  instanceOutput,
  type Json,
  type Logger,
  leaseOfTask,
  MAX_STORABLE_DATE,
  mapTaskOutput,
  type PipelineRow,
  type RateLimit,
  rateLimitBucket,
  readOnlyContext,
  SignalTimeoutError,
  sleep,
  type TaskDefinition,
  type TaskOutcome,
  type TaskRow,
  type TaskRunInfo,
  type ValidationError,
  type WaitFor,
  type Workflow,
} from '@orreryjs/core';
import type { EmitEvent } from '../events.js';
import type { WorkflowRegistry } from '../registry.js';
import { SPAN_ATTRIBUTES, setOutcome, startTaskSpan } from '../tracing.js';
import { type ActiveTask, type ActiveTasks, leaseOf } from './active-tasks.js';
import type { MapInputs } from './map-inputs.js';
import type { RateGate } from './rate-gate.js';
import { taskInput, unmetTrigger } from './task-input.js';
import { completedOutcome, errorMessage, failedOutcome, finishedTaskRows, maxAttempts } from './task-outcome.js';

/** What a task attempt needs from its runner. */
export interface AttemptEnvironment {
  store: ExecutionStore;
  registry: WorkflowRegistry;
  active: ActiveTasks;
  runnerId: string;
  taskTimeoutMs: number;
  maxContextBytes: number;
  clock: Clock;
  logger: Logger;
  emit: EmitEvent;
  /**
   * This attempt's outcome made its pipeline terminal; `tasks` are all its task rows when known
   * without a read; `slotsGivenOn` when its concurrency slots were given on with the outcome.
   */
  pipelineFinished(row: PipelineRow, tasks: readonly TaskRow[] | null, slotsGivenOn: boolean): void;
  /** Work is claimable now (dependents were readied), or at `atMs` (a retry's backoff ends). */
  wake(atMs?: number): void;
  /** An attempt ended (its outcome committed or given up), so a slot of `maxConcurrentTasks` is free again. */
  slotFreed(entry?: ActiveTask): void;
  /**
   * The attempt's task code is over and only its outcome's commit is pending: the claim loop
   * may count its slot as free already, so that claiming the next tasks overlaps that commit.
   */
  outcomeReady(entry: ActiveTask): void;
  /** Counts rate-limited starts, batched with the attempts that start at the same time. */
  rateGate: RateGate;
  /** The input of map tasks' instances, read once per mapping. */
  mapInputs: MapInputs;
  /**
   * Commits an outcome, fenced on the attempt: the claim loop's group commit, so that outcomes
   * ending together commit together (and may take the next claim along).
   */
  finish(request: FinishTaskRequest): Promise<FinishTaskResult>;
}

/** Pauses between tries of a commit the database refused; past them the lease expires and the task runs again. */
const COMMIT_RETRY_DELAYS_MS = [50, 250, 1000];

/** Identifies the attempt in events and logs. */
interface AttemptRef {
  executionId: string;
  workflowName: string;
  taskId: string;
  attempt: number;
}

/**
 * Starts running a claimed task and tracks it in `env.active` at once (so it counts against
 * the concurrency limit and its lease is renewed). When this process still runs an older
 * attempt of the task, that one is aborted and this one's code starts once it has settled:
 * never two attempts of one task at once. The returned entry's `done` settles when the
 * attempt is over; it never rejects.
 */
export function startAttempt(claimed: ClaimedTask, env: AttemptEnvironment): ActiveTask {
  const { task } = claimed;
  const entry: ActiveTask = {
    ...leaseOfTask(task),
    startedAtMs: performance.now(),
    leaseExpiresAtMs: task.leaseExpiresAt?.getTime() ?? 0,
    controller: new AbortController(),
    interrupt: null,
    abortCause: null,
    done: Promise.resolve(),
  };
  const older = env.active.add(entry);
  const run = () => runAttempt(claimed, entry, env);
  entry.done = (older === undefined ? run() : older.done.then(run))
    .catch((error: unknown) => {
      env.logger.error({ err: error, taskExecutionId: task.id }, 'task attempt failed unexpectedly');
    })
    .finally(() => {
      env.active.remove(entry);
      env.slotFreed(entry);
    });
  return entry;
}

async function runAttempt(claimed: ClaimedTask, entry: ActiveTask, env: AttemptEnvironment): Promise<void> {
  // Aborted while an older attempt of the task settled: a cancel, pause or shutdown already decided its row.
  if (entry.abortCause !== null) return;
  const { task: row, pipeline } = claimed;
  const workflow = env.registry.find(row.workflowName);
  // An instance of a map task runs its task's code (see core's map.ts).
  const definition = workflow?.taskById.get(row.mapOf ?? row.taskId);
  if (workflow === undefined || definition === undefined) {
    // Claims are filtered on registered tasks, so this means the registry and the claim disagree: give it back.
    await env.store.releaseLeases(env.runnerId, [entry], env.clock.now());
    return;
  }
  // Events, metrics and spans name an instance by its task: one series per task, however many items.
  const ref = { executionId: pipeline.id, workflowName: row.workflowName, taskId: definition.id, attempt: row.attempt };
  // One orrery.task span per attempt, a child of the caller's stored trace context, active while the task runs.
  const traced = startTaskSpan(pipeline, ref, env.runnerId);
  try {
    await otelContext.with(traced.context, () =>
      runTraced(claimed, entry, env, { workflow, definition, ref }, traced.span),
    );
  } finally {
    traced.span.end();
  }
}

/** The registered code of a claimed task and how events name its attempt. */
interface AttemptCode {
  workflow: Workflow;
  definition: TaskDefinition;
  ref: AttemptRef;
}

async function runTraced(
  claimed: ClaimedTask,
  entry: ActiveTask,
  env: AttemptEnvironment,
  { workflow, definition, ref }: AttemptCode,
  span: Span,
): Promise<void> {
  const { task: row, pipeline } = claimed;
  if (claimed.leaseExpired && row.failedAttempts >= maxAttempts(definition.retry)) {
    // The crashed attempts used up the policy; the retryOn predicate judges task errors, not crashes.
    const error = row.error ?? 'lease expired';
    return commit(env, claimed, entry, ref, span, { status: 'failed', error, ran: false }, 0);
  }
  // An instance's task already passed its trigger, `when` and `notBefore` before it mapped.
  const isInstance = row.mapOf != null;
  const skipReason = isInstance ? null : unmetTrigger(definition, claimed.terminalTasks);
  if (skipReason !== null) return commit(env, claimed, entry, ref, span, { status: 'skipped', reason: skipReason }, 0);

  const startedMs = env.clock.now().getTime();
  let outcome: TaskOutcome;
  let stack: string | null = null;
  try {
    const context = new Context(
      isInstance
        ? await env.mapInputs.inputOf(workflow, claimed)
        : taskInput(workflow, definition.id, pipeline.input, claimed.terminalTasks),
    );
    if (isInstance) {
      readOnlyContext(
        context,
        `Task "${row.taskId}" is an instance of a map task: ctx is read-only; return its result from run instead.`,
      );
    } else {
      if (definition.when !== undefined && !definition.when(context)) {
        return commit(env, claimed, entry, ref, span, { status: 'skipped', reason: 'when returned false' }, 0);
      }
      if (definition.waitFor !== undefined)
        return await awaitSignal(env, claimed, entry, ref, span, definition.waitFor);
      if (definition.notBefore !== undefined && (await deferredByNotBefore(env, entry, definition, context, ref))) {
        span.setAttribute(SPAN_ATTRIBUTES.outcome, 'not_before');
        return;
      }
      if (definition.map !== undefined) return await startMap(env, claimed, entry, ref, span, definition, context);
    }
    if (
      definition.rateLimit !== undefined &&
      !(await rateLimitAdmits(env, entry, definition.rateLimit, context, ref))
    ) {
      span.setAttribute(SPAN_ATTRIBUTES.outcome, 'rate_limited');
      return;
    }
    env.emit('task:started', ref);
    const value = await runWithSignal(definition, context, attemptInfo(ref, entry, claimed), entry, env);
    outcome = isInstance
      ? { status: 'completed', output: instanceOutput(row.taskId, value) }
      : completedOutcome(context, row.taskId, env.maxContextBytes);
  } catch (error) {
    if (entry.abortCause !== null && entry.abortCause !== 'timeout') {
      // Cancel and pause already rewrote the task row, shutdown releases the lease and a lost lease is
      // fenced out: none of them is a failed attempt, so there is nothing to commit.
      env.logger.debug({ ...ref, cause: entry.abortCause }, 'task attempt aborted');
      span.setAttribute(SPAN_ATTRIBUTES.outcome, entry.abortCause);
      return;
    }
    span.recordException(error instanceof Error ? error : String(error));
    const message =
      entry.abortCause === 'timeout'
        ? `Task "${row.taskId}" timed out after ${definition.timeoutMs ?? env.taskTimeoutMs} ms`
        : errorMessage(error);
    outcome = failedOutcome(definition.retry, row.failedAttempts + 1, error, message, env.clock.now());
    // The attempt's history entry says `timed_out` rather than `failed`.
    if (entry.abortCause === 'timeout' && outcome.status !== 'skipped' && outcome.status !== 'completed') {
      outcome = { ...outcome, timedOut: true };
    }
    if (entry.abortCause === null && error instanceof Error && typeof error.stack === 'string') stack = error.stack;
  }
  return commit(env, claimed, entry, ref, span, outcome, env.clock.now().getTime() - startedMs, stack);
}

/**
 * A wait task's attempt: its signal, if it has arrived, completes the task (the payload, null
 * when none, under the task's id); else the task is given back until its timeout (or for good:
 * a signal wakes it), holding nothing; past the timeout it fails with SignalTimeoutError,
 * never retried. The deadline is kept from the first wait, so waking early changes nothing.
 * A signal the claim brought along completes it at once: a stored signal is never changed nor
 * removed while its execution lives, so no transaction of its own need read it again.
 */
async function awaitSignal(
  env: AttemptEnvironment,
  claimed: ClaimedTask,
  entry: ActiveTask,
  ref: AttemptRef,
  span: Span,
  waitFor: WaitFor,
): Promise<void> {
  const now = env.clock.now();
  const waitsUntil =
    claimed.task.waitsUntil ?? (waitFor.timeoutMs === undefined ? null : new Date(now.getTime() + waitFor.timeoutMs));
  const timedOut = waitsUntil !== null && waitsUntil.getTime() <= now.getTime();
  const found =
    claimed.signal !== undefined
      ? { status: 'signalled' as const, ...claimed.signal }
      : await env.store.waitForSignal({
          runnerId: env.runnerId,
          ...leaseOf(entry),
          name: waitFor.signal,
          now,
          waitsUntil,
          sleepUntil: timedOut ? null : (waitsUntil ?? MAX_STORABLE_DATE),
        });
  switch (found.status) {
    case 'signalled': {
      const output = { set: { [ref.taskId]: found.payload }, deleted: [] };
      return commit(env, claimed, entry, ref, span, { status: 'completed', output }, 0);
    }
    case 'timedOut': {
      const error = new SignalTimeoutError(
        `Task "${ref.taskId}" waited ${waitFor.timeoutMs} ms for the signal "${waitFor.signal}", which did not arrive.`,
      );
      return commit(env, claimed, entry, ref, span, { status: 'failed', error: `${error.name}: ${error.message}` }, 0);
    }
    case 'waiting':
      span.setAttribute(SPAN_ATTRIBUTES.outcome, 'waiting');
      if (waitsUntil !== null) env.wake(waitsUntil.getTime());
      return;
    case 'lost':
      return;
  }
}

/**
 * A map task's attempt: its `map` returns the items (on a read-only context), and the store
 * starts one instance per item, parking the task until they settle it (see core's map.ts);
 * no items complete it at once with `[]`. Items that are not an array of at most MAX_MAP_ITEMS
 * JSON values fail it for good with ValidationError; what `map` throws fails the attempt as
 * the task's own error would.
 */
async function startMap(
  env: AttemptEnvironment,
  claimed: ClaimedTask,
  entry: ActiveTask,
  ref: AttemptRef,
  span: Span,
  definition: TaskDefinition,
  context: Context,
): Promise<void> {
  readOnlyContext(context, `map of task "${ref.taskId}" reads ctx only; return the items instead.`);
  const returned = definition.map!(context);
  let items: Json[];
  try {
    items = checkMapItems(ref.taskId, returned);
  } catch (error) {
    // Never retried: the same context would map to the same items.
    const invalid = error as ValidationError;
    return commit(
      env,
      claimed,
      entry,
      ref,
      span,
      { status: 'failed', error: `${invalid.name}: ${invalid.message}` },
      0,
    );
  }
  if (items.length === 0) {
    return commit(env, claimed, entry, ref, span, { status: 'completed', output: mapTaskOutput(ref.taskId, []) }, 0);
  }
  const started = await env.store.startMap({ runnerId: env.runnerId, ...leaseOf(entry), items, now: env.clock.now() });
  if (!started) return;
  span.setAttribute(SPAN_ATTRIBUTES.outcome, 'mapped');
  env.logger.debug({ ...ref, items: items.length }, 'map task started its instances');
  env.wake();
}

/**
 * Asks the task's `notBefore` for the instant it may start: one ahead gives the task back
 * unstarted until then (no attempt used) and this runner wakes at it; true when so. What
 * `notBefore` throws, or a value that is not a valid Date or null, fails the attempt as the
 * task's own error would.
 */
async function deferredByNotBefore(
  env: AttemptEnvironment,
  entry: ActiveTask,
  definition: TaskDefinition,
  context: Context,
  ref: AttemptRef,
): Promise<boolean> {
  const instant = definition.notBefore!(context);
  if (instant === null) return false;
  if (!(instant instanceof Date) || !Number.isFinite(instant.getTime())) {
    throw new TypeError(`notBefore of task "${ref.taskId}" must return a valid Date or null, got ${String(instant)}.`);
  }
  const now = env.clock.now();
  if (instant.getTime() <= now.getTime()) return false;
  await env.store.deferTask({ runnerId: env.runnerId, ...leaseOf(entry), availableAt: instant, now });
  env.logger.debug({ ...ref, notBefore: instant }, 'notBefore ahead: task given back until then');
  env.wake(instant.getTime());
  return true;
}

/**
 * Counts this attempt's start in its rate-limit bucket, in the database (exact across runners):
 * true when it may run. When the bucket is full the store gave the task back unstarted (no
 * attempt used, no failure) and this runner wakes when it may be claimed again; a lost lease
 * is someone else's task now. Either way the slot is free at once.
 */
async function rateLimitAdmits(
  env: AttemptEnvironment,
  entry: ActiveTask,
  rule: RateLimit,
  context: Context,
  ref: AttemptRef,
): Promise<boolean> {
  const gate = await env.rateGate.start({
    runnerId: env.runnerId,
    ...leaseOf(entry),
    bucket: rateLimitBucket(rule, context.toJSON()),
    limit: rule.limit,
    periodMs: rule.periodMs,
    now: env.clock.now(),
  });
  if (gate.status === 'started') return true;
  if (gate.status === 'deferred') {
    env.logger.debug({ ...ref, availableAt: gate.availableAt }, 'rate limit reached: task given back until then');
    env.wake(gate.availableAt.getTime());
  }
  return false;
}

function attemptInfo(ref: AttemptRef, entry: ActiveTask, { task, pipeline }: ClaimedTask): TaskRunInfo {
  return {
    ...ref,
    // Created when the task's code first reads it: an AbortSignal (an EventTarget) costs more than a short task.
    get signal() {
      return entry.controller.signal;
    },
    ...(pipeline.scheduledTime === null ? {} : { scheduledTime: pipeline.scheduledTime }),
    ...(task.mapIndex == null ? {} : { item: task.mapItem?.value ?? null, index: task.mapIndex }),
  };
}

/**
 * Runs the task until it settles or its signal aborts (timeout, cancel, pause, shutdown,
 * lost lease), whichever comes first: a task that ignores its signal cannot hold its slot.
 * The time limit may be of any length (past setTimeout's 2³¹ ms too); `Infinity` is none.
 */
function runWithSignal(
  definition: TaskDefinition,
  context: Context,
  info: TaskRunInfo,
  entry: ActiveTask,
  env: AttemptEnvironment,
): Promise<unknown> {
  env.active.startTimeLimit(entry, definition.timeoutMs ?? env.taskTimeoutMs);
  const aborted = new Promise<never>((_, reject) => {
    if (entry.abortCause !== null) reject(entry.controller.signal.reason);
    else entry.interrupt = reject;
  });
  const running = callRun(definition, context, info);
  // Whichever loses the race settles unobserved; these keep its rejection from being reported as unhandled.
  running.catch(() => undefined);
  aborted.catch(() => undefined);
  return Promise.race([running, aborted]).finally(() => {
    entry.interrupt = null;
    env.active.endTimeLimit(entry);
  });
}

/**
 * Calls the task's code now, in this turn (a turn of its own would be one more step before every
 * start); what it throws at once rejects the promise, as a rejection it returned would.
 */
function callRun(definition: TaskDefinition, context: Context, info: TaskRunInfo): Promise<unknown> {
  try {
    // A wait task never gets here (see awaitSignal): every other task has its code.
    // What run returns: an instance's result (see core's map.ts); other tasks return nothing.
    return Promise.resolve(definition.run!(context, info));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Commits an outcome, fenced on this attempt, retrying a refused write a few times; then reports it. */
async function commit(
  env: AttemptEnvironment,
  claimed: ClaimedTask,
  entry: ActiveTask,
  ref: AttemptRef,
  span: Span,
  outcome: TaskOutcome,
  durationMs: number,
  stack: string | null = null,
): Promise<void> {
  const workflow = env.registry.get(ref.workflowName);
  const now = env.clock.now();
  const { task } = claimed;
  setOutcome(span, outcome);
  env.outcomeReady(entry);
  const result = await finishWithRetries(env, {
    runnerId: env.runnerId,
    ...leaseOf(entry),
    outcome,
    // An instance's: its map task's dependents, for when its outcome settles the task.
    dependents: workflow.dependents.get(ref.taskId) ?? [],
    now,
    ...(task.mapOf == null ? {} : { mapInstance: { taskId: task.mapOf, index: task.mapIndex ?? 0 } }),
  });
  if (result === null) return;
  if (!result.accepted) {
    env.logger.warn(ref, 'task outcome not committed: this runner no longer holds the lease');
    return;
  }
  reportOutcome(env, ref, outcome, durationMs, claimed, stack);
  // An instance that failed for good failed its map task and cancelled the others: stop those running here.
  if (task.mapOf != null && outcome.status === 'failed')
    env.active.abortMapInstances(task.pipelineExecutionId, task.mapOf);
  // A map's instances come in numbers, and a claim skips them while another transaction holds their
  // pipeline (as this outcome's did): claim again rather than wait for the poll.
  if (result.readied > 0 || task.mapOf != null) env.wake();
  if (outcome.status === 'retry') env.wake(outcome.availableAt.getTime());
  if (result.finishedPipeline !== null) {
    env.pipelineFinished(
      result.finishedPipeline,
      // An instance's pipeline ended with its map task, whose row the claim did not return: read them.
      task.mapOf == null ? finishedTaskRows(claimed, outcome, now, workflow.tasks.length) : null,
      result.slotsGivenOn === true,
    );
  }
}

async function finishWithRetries(
  env: AttemptEnvironment,
  request: FinishTaskRequest,
): Promise<FinishTaskResult | null> {
  for (let tries = 0; ; tries += 1) {
    try {
      return await env.finish(request);
    } catch (error) {
      const delayMs = COMMIT_RETRY_DELAYS_MS[tries];
      if (delayMs === undefined) {
        env.logger.error(
          { err: error, taskExecutionId: request.taskExecutionId },
          'could not commit task outcome; the task will run again when its lease expires',
        );
        return null;
      }
      env.logger.warn({ err: error, taskExecutionId: request.taskExecutionId }, 'task outcome commit failed; retrying');
      await sleep(delayMs);
    }
  }
}

function reportOutcome(
  env: AttemptEnvironment,
  ref: AttemptRef,
  outcome: TaskOutcome,
  durationMs: number,
  claimed: ClaimedTask,
  stack: string | null,
): void {
  switch (outcome.status) {
    case 'completed':
      env.emit('task:completed', { ...ref, durationMs });
      return;
    case 'skipped':
      env.emit('task:skipped', { ...ref, reason: outcome.reason });
      return;
    case 'failed':
      env.emit('task:failed', { ...ref, error: outcome.error, stack, willRetry: false, retryAt: null });
      return;
    case 'retry':
      env.logger.debug({ ...ref, failedAttempts: claimed.task.failedAttempts + 1 }, 'task will retry');
      env.emit('task:failed', { ...ref, error: outcome.error, stack, willRetry: true, retryAt: outcome.availableAt });
      return;
  }
}
