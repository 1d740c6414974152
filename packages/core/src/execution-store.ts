import type { ContextDelta } from './context.js';
import type { AttemptOutcome, PipelineStatus, TaskStatus } from './executor.js';
import type { PipelineGroup } from './flow-control.js';
import type { Json, JsonObject } from './json.js';
import type { Page } from './paging.js';

/**
 * Rows and units of work for pipelines and their tasks. Ids are canonical lower-case UUID
 * strings and instants are millisecond `Date`s; adapters map them to their column types.
 * Every method is one transaction. Stores never read the clock: callers pass `now`.
 */

/** A stored pipeline execution. */
export interface PipelineRow {
  id: string;
  workflowName: string;
  workflowVersion: string;
  status: PipelineStatus;
  input: JsonObject;
  idempotencyKey: string | null;
  scheduledTime: Date | null;
  /** The schedule whose occurrence started it, else null. */
  scheduleId: string | null;
  /** Tasks not yet terminal; the pipeline ends when it reaches 0. */
  remainingTasks: number;
  /** Tasks that ended `failed`; a pipeline with any is `failed`. */
  failedTasks: number;
  error: string | null;
  pauseReason: string | null;
  /**
   * The W3C trace context (`traceparent`, `tracestate`) of the span that started it, as
   * OpenTelemetry's `propagation.inject` wrote it; null when no trace was active.
   */
  traceContext: Record<string, string> | null;
  /** Its delayed start, else null. */
  runAt: Date | null;
  /** Higher is claimed first. */
  priority: number;
  /** The concurrency groups it belongs to; null for a workflow without rules. */
  concurrency: PipelineGroup[] | null;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  updatedAt: Date;
}

/**
 * An attempt that did not complete, as the `attempt_history` JSON column stores it (the
 * statement that ends the attempt appends it): instants in epoch milliseconds, as JSON holds
 * them. A completed attempt is never stored, so the success path writes nothing more: it is
 * the row itself (`attempt`, `runnerId`, `startedAt`, `completedAt`).
 */
export interface StoredAttempt {
  attempt: number;
  runnerId: string | null;
  startedAt: number;
  endedAt: number;
  outcome: Exclude<AttemptOutcome, 'completed'>;
  error: string | null;
}

/**
 * An instance's item as its row stores it: wrapped, since an item may be any JSON value, with
 * the attempt of its map task that mapped it. The instances of one mapping share their task's
 * input, so a runner reads it once per (pipeline, task, attempt); a retried map task maps anew
 * under a later attempt.
 */
export interface MapItem {
  value: Json;
  attempt: number;
}

/** A stored task execution. */
export interface TaskRow {
  id: string;
  pipelineExecutionId: string;
  workflowName: string;
  taskId: string;
  /** Index in the workflow's canonical order. */
  position: number;
  status: TaskStatus;
  /** Claims so far: the fencing token of the current lease, and `info.attempt`. */
  attempt: number;
  /** Attempts that failed or whose lease expired; what the retry policy counts. */
  failedAttempts: number;
  /** Dependencies not yet terminal; the task becomes `ready` at 0. */
  pendingDeps: number;
  /** When a `ready` task may be claimed (later than now while a retry backs off). */
  availableAt: Date;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  /** The runner that claimed the latest attempt; unlike `leaseOwner`, kept once the attempt ends. */
  runnerId: string | null;
  /** The attempts that did not complete, oldest first; null before the first of them. */
  attemptHistory: StoredAttempt[] | null;
  /** The delta of the successful attempt. */
  output: ContextDelta | null;
  error: string | null;
  startedAt: Date | null;
  completedAt: Date | null;
  /** When a wait task's signal times out, once it has waited; null (or absent) before, and for other tasks. */
  waitsUntil?: Date | null;
  /** An instance of a map task (see map.ts): that task's id; null or absent for a task. */
  mapOf?: string | null;
  /** An instance of a map task: its item's position in the list, from 0. */
  mapIndex?: number | null;
  /** An instance of a map task: its item, wrapped as the column holds it (see {@link MapItem}). */
  mapItem?: MapItem | null;
}

/** Input of {@link ExecutionStore.createPipeline}. */
export interface NewPipeline {
  id: string;
  workflowName: string;
  workflowVersion: string;
  input: JsonObject;
  idempotencyKey: string | null;
  scheduledTime: Date | null;
  /** The schedule whose occurrence starts it; null or absent for none. */
  scheduleId?: string | null;
  /** Delayed start: the tasks' `availableAt`; null or absent for now. */
  runAt?: Date | null;
  /** The W3C trace context of the span that starts it (see {@link PipelineRow.traceContext}); null or absent for none. */
  traceContext?: Record<string, string> | null;
  /** Higher is claimed first; 0 or absent for the default. */
  priority?: number;
  /**
   * The concurrency groups it joins; empty or absent for none. A pipeline with groups is
   * *queued* until every group has room (see {@link ExecutionStore.admitQueued}): its first
   * tasks stay `not_started`, and `onLimit` decides what a full group does at creation.
   */
  concurrency?: readonly PipelineGroup[];
  now: Date;
  /**
   * One per task, in canonical order; `pendingDeps` = number of dependencies; `delayMs` (0 or
   * absent for none) is how long after becoming ready it stays unclaimable.
   */
  tasks: ReadonlyArray<{
    id: string;
    taskId: string;
    position: number;
    pendingDeps: number;
    delayMs?: number;
    /** A wait task's signal name; null or absent for a task with code. */
    waitSignal?: string | null;
  }>;
}

/** Options of {@link ExecutionStore.createPipelines}. */
export interface CreatePipelinesOptions {
  /** Refuse the whole batch when a key belongs to an execution of another workflow (`executeAsyncMany`). */
  allOrNothing?: boolean;
}

/** The (workflow, task ids) pairs a runner can execute: it claims nothing else. */
export interface RegisteredTasks {
  workflowName: string;
  taskIds: readonly string[];
}

/** Options of {@link ExecutionStore.finishTasks}. */
export interface FinishTasksOptions {
  /**
   * Leases the next tasks after the outcomes, in their transaction: a worker whose slots free
   * up commits its outcomes and claims with one commit instead of two. Default: no claim.
   */
  claim?: ClaimTasksRequest;
}

/** Result of {@link ExecutionStore.finishTasks}. */
export interface FinishTasksResult {
  /** One per outcome, in input order. */
  finished: FinishTaskResult[];
  /** The tasks the claim leased; empty without a claim. */
  claimed: ClaimedTask[];
}

/** Input of {@link ExecutionStore.claimTasks}. */
export interface ClaimTasksRequest {
  runnerId: string;
  registered: readonly RegisteredTasks[];
  limit: number;
  leaseMs: number;
  now: Date;
  /**
   * How many of the claimed tasks (the oldest first, in the order returned) start at once;
   * the rest are claimed ahead of a free slot. A task claimed ahead is leased but not started
   * (its row's `startedAt` stays null) until a renewal with `started` or its outcome records
   * the start, so that a crash before it ran gives it back without using an attempt.
   * Default: all of them.
   */
  startNow?: number;
}

/** A task this runner now holds, with what it needs to run. */
export interface ClaimedTask {
  /** The row after the claim: `running`, attempt incremented, leased to the claimer. */
  task: TaskRow;
  pipeline: PipelineRow;
  /**
   * Every task of the pipeline that is terminal, with its output (instances of map tasks left
   * out). Empty for an instance of a map task when no other task of its pipeline was claimed
   * with it: its task's input is read once per mapping (see map.ts).
   */
  terminalTasks: TaskRow[];
  /**
   * True when this claim took over the expired lease of an attempt whose code had started
   * (counted in `failedAttempts`). The expired lease of a task claimed ahead and never
   * started is taken over without a charge, and this is false.
   */
  leaseExpired: boolean;
  /**
   * A wait task's signal, when the claim found it stored: the caller completes the task with
   * its payload without {@link ExecutionStore.waitForSignal}. Absent for other tasks, and when
   * the claim did not see it (a signal committed during the claim may be missed; waitForSignal
   * then finds it).
   */
  signal?: { payload: Json | null };
}

/**
 * A lease to renew or release: fenced by owner and attempt. It names the task both by its
 * row id and by (pipeline, task id): an adapter may reach rows by the latter only, as
 * Postgres does, so that the task row carries one index fewer and every update writes less.
 */
export interface LeaseRef {
  taskExecutionId: string;
  pipelineExecutionId: string;
  /** The task's id in its workflow. */
  taskId: string;
  attempt: number;
}

/** Options of {@link ExecutionStore.renewLeases}. */
export interface RenewLeasesOptions {
  /** The leases' attempts run their code now: record the start of those claimed ahead. Default false. */
  started?: boolean;
}

/** How an attempt ended, as committed by {@link ExecutionStore.finishTasks}. */
export type TaskOutcome =
  | { status: 'completed'; output: ContextDelta }
  | {
      status: 'failed';
      error: string;
      /** The attempt ran out of time: its history entry says `timed_out`. */
      timedOut?: boolean;
      /**
       * False when the claim gave up without running the code (earlier attempts lost their
       * leases and used up the retry policy): this claim was no attempt, so no history entry.
       */
      ran?: boolean;
    }
  | { status: 'skipped'; reason: string }
  | { status: 'retry'; error: string; availableAt: Date; timedOut?: boolean };

/** An attempt's outcome, one of the batch of {@link ExecutionStore.finishTasks}. */
export interface FinishTaskRequest extends LeaseRef {
  runnerId: string;
  outcome: TaskOutcome;
  /**
   * Task ids that depend directly on this one: their pending counts drop when it ends. For an
   * instance of a map task: the map task's dependents, for when this outcome settles it.
   */
  dependents: readonly string[];
  now: Date;
  /**
   * Set for an instance of a map task (its row's `mapOf` and `mapIndex`): its outcome does not
   * count in the pipeline; completing the last instance, or failing one for good, settles the
   * map task in the same transaction (see map.ts).
   */
  mapInstance?: { taskId: string; index: number };
}

/** What {@link ExecutionStore.finishTasks} did with one outcome. */
export interface FinishTaskResult {
  /** False when the lease was lost (fenced out): nothing was written. */
  accepted: boolean;
  /** Dependents that became `ready`. */
  readied: number;
  /** The pipeline row when this outcome made it terminal. */
  finishedPipeline: PipelineRow | null;
  /**
   * True when that pipeline's concurrency slots were given on in the same transaction (the
   * queued pipelines of its groups admitted, so that the batch's claim already sees them):
   * always on SQLite, on Postgres when the batch carried a claim. False: the caller gives them
   * on (see {@link ExecutionStore.admitQueued}).
   */
  slotsGivenOn?: boolean;
}

/** A task {@link ExecutionStore.retryPipeline} sends back to run. */
export interface RetriedTask {
  id: string;
  /** Its dependencies that are being retried too: `ready` at 0, else `not_started`. */
  pendingDeps: number;
}

/** Input of {@link ExecutionStore.deferTask}: a claimed task to give back unstarted until `availableAt`. */
export interface DeferTaskRequest extends LeaseRef {
  runnerId: string;
  availableAt: Date;
  now: Date;
  /** A wait task's signal deadline, kept from the first time it waits (later values are ignored). */
  waitsUntil?: Date | null;
}

/** Input of {@link ExecutionStore.startMap}: a claimed map task and the items its map returned. */
export interface StartMapRequest extends LeaseRef {
  runnerId: string;
  /** At most MAX_MAP_ITEMS, checked by the caller; at least one. */
  items: readonly Json[];
  now: Date;
}

/** A map task's instances by status, as {@link ExecutionStore.countMapInstances} reports them. */
export interface MapInstanceCounts {
  taskId: string;
  total: number;
  completed: number;
  failed: number;
  /** Leased now (their attempt runs, or is claimed ahead). */
  running: number;
}

/** Input of {@link ExecutionStore.waitForSignal}. */
export interface WaitForSignalRequest extends LeaseRef {
  runnerId: string;
  /** The signal's name. */
  name: string;
  now: Date;
  /** When the wait times out (kept from the first wait); null: it never does. */
  waitsUntil: Date | null;
  /** Until when to give the task back if the signal is absent; null: the wait has timed out. */
  sleepUntil: Date | null;
}

/** What {@link ExecutionStore.waitForSignal} found. */
export type WaitForSignalResult =
  | { status: 'signalled'; payload: Json | null }
  | { status: 'waiting' }
  | { status: 'timedOut' }
  | { status: 'lost' };

/** Input of {@link ExecutionStore.sendSignal}. */
export interface SendSignalRequest {
  executionId: string;
  name: string;
  payload: Json | null;
  now: Date;
}

/**
 * What {@link ExecutionStore.sendSignal} did: `sent` (stored, and its waiting task woken),
 * `duplicate` (one of that name was already there: nothing written), `unknown` (no such
 * execution) or `terminal` (the execution has ended: nothing written).
 */
export type SendSignalResult = 'sent' | 'duplicate' | 'unknown' | 'terminal';

/** Input of {@link ExecutionStore.startRateLimited}: a claimed task about to run, and its bucket. */
export interface RateLimitedStart extends LeaseRef {
  runnerId: string;
  /** The bucket (see `rateLimitBucket`). */
  bucket: string;
  limit: number;
  periodMs: number;
  now: Date;
}

/** What {@link ExecutionStore.startRateLimited} decided. */
export type RateLimitedStartResult =
  /** The start is counted: run the attempt. */
  | { status: 'started' }
  /** The bucket is full: the task is `ready` again from `availableAt`, its claim undone. */
  | { status: 'deferred'; availableAt: Date }
  /** The lease is no longer this attempt's: nothing was written. */
  | { status: 'lost' };

/** A queued pipeline's full group, as {@link ExecutionStore.listQueuedGroups} reports it. */
export interface QueuedGroup {
  pipelineExecutionId: string;
  group: string;
  /** Pipelines of the group active now (admitted and not terminal). */
  active: number;
  limit: number;
}

/** A concurrency group's occupancy, as {@link ExecutionStore.listConcurrencyGroups} reports it. */
export interface ConcurrencyGroupInfo {
  group: string;
  workflowName: string;
  /** Pipelines admitted and not terminal. */
  active: number;
  /** Pipelines queued (not admitted, not terminal). */
  queued: number;
  /** The limit of the group's newest rule (pipelines of older versions may have another). */
  limit: number;
}

/** Filter of {@link ExecutionStore.listPipelines}; newest first. */
export interface PipelineFilter {
  workflowName?: string;
  status?: PipelineStatus;
  scheduleId?: string;
  limit: number;
  offset: number;
}

/** Storage port for pipelines and tasks. */
export interface ExecutionStore {
  /**
   * Inserts the pipeline and all its task rows, or, when `idempotencyKey` is taken,
   * returns the existing pipeline and writes nothing.
   */
  createPipeline(pipeline: NewPipeline): Promise<{ pipeline: PipelineRow; created: boolean }>;
  /**
   * {@link createPipeline} for many pipelines in one transaction, results in input order: a
   * pipeline whose idempotency key is taken (by an earlier execution, or by an earlier
   * pipeline of the same batch) is not created and the key's holder is returned. With
   * `allOrNothing`, a key held by an execution of another workflow rolls the whole call back.
   * @throws IdempotencyConflictError (with `allOrNothing`) naming the key and its holder; nothing is written.
   */
  createPipelines(
    pipelines: readonly NewPipeline[],
    options?: CreatePipelinesOptions,
  ): Promise<Array<{ pipeline: PipelineRow; created: boolean }>>;
  getPipeline(id: string): Promise<PipelineRow | null>;
  getPipelineByIdempotencyKey(key: string): Promise<PipelineRow | null>;
  /**
   * Ids of at most `limit` pipelines whose id, as 32 hex digits, starts with `hexPrefix`
   * (lower case, no dashes), in id order: how a shortened id (the dashboard and the CLI show
   * 8 characters) is resolved. A range on the id ({@link uuidPrefixRange}), so the primary key
   * serves it.
   * @throws ValidationError when `hexPrefix` is not 1 to 32 lower-case hex digits.
   */
  listPipelineIdsByPrefix(hexPrefix: string, limit: number): Promise<string[]>;
  listPipelines(filter: PipelineFilter): Promise<PipelineRow[]>;
  /** Tasks of a pipeline in canonical order (without the instances of its map tasks). */
  listTasks(pipelineExecutionId: string): Promise<TaskRow[]>;
  /**
   * Leases up to `limit` claimable tasks of registered workflows in pending or running
   * pipelines: `ready` ones whose `availableAt` has come, and `running` ones whose lease
   * expired (a failed attempt). Marks their pipelines running. Concurrent claimers never
   * receive the same task (SKIP LOCKED on Postgres). A wait task comes with its signal when
   * one is stored ({@link ClaimedTask.signal}).
   */
  claimTasks(request: ClaimTasksRequest): Promise<ClaimedTask[]>;
  /**
   * Extends the leases still held by `runnerId`; returns the ids it still holds. With
   * `started`, their attempts run their code: a task claimed ahead records its start (see
   * {@link ClaimTasksRequest.startNow}).
   */
  renewLeases(
    runnerId: string,
    leases: readonly LeaseRef[],
    leaseMs: number,
    now: Date,
    options?: RenewLeasesOptions,
  ): Promise<string[]>;
  /** Gives leases back at shutdown: the tasks become ready again, not counted as failures. */
  releaseLeases(runnerId: string, leases: readonly LeaseRef[], now: Date): Promise<number>;
  /**
   * Commits a batch of attempts' outcomes (group commit) and, with `claim`, then leases the next
   * tasks, all in one transaction: a failure rolls back every outcome and the claim. Each
   * outcome is fenced on its own (lease owner, attempt, running): a stale one is refused
   * (`accepted: false`, nothing written for it) while the others commit. A terminal outcome
   * decrements its dependents' pending counts (readying those at 0) and its pipeline's
   * remaining count, ending the pipeline at 0. Dependents and pipelines count every accepted
   * terminal outcome of the batch, so two parents finishing in one batch ready their child
   * exactly once, and a pipeline ends once (its row is returned with the last of its outcomes
   * in the batch). Pipeline rows are locked first, in id order, so concurrent parents cannot
   * strand a child and concurrent batches cannot deadlock. The claim is {@link claimTasks}'s
   * and sees what the outcomes readied.
   */
  finishTasks(outcomes: readonly FinishTaskRequest[], options?: FinishTasksOptions): Promise<FinishTasksResult>;
  /**
   * Admits queued pipelines of the given concurrency groups (all groups with queued pipelines
   * when `groups` is null) while every group of each has room: higher priority first, then
   * oldest (`runAt`, else creation). An admitted pipeline is active in its groups until it is
   * terminal; its tasks without dependencies become `ready` (no earlier than now). One
   * transaction per call, serialized per group across processes, so no group ever holds more
   * than its limit. Called after whatever may free a slot (a pipeline ending, a cancel, a
   * retry) and periodically, so that a slot freed by a process that died is still given on.
   * Returns how many pipelines it admitted.
   */
  admitQueued(groups: readonly string[] | null, now: Date): Promise<number>;
  /**
   * Every concurrency group with active or queued pipelines (of `workflowName`, or of all
   * workflows when null), by workflow then group name: the dashboard's occupancy and the metrics.
   */
  listConcurrencyGroups(workflowName: string | null): Promise<ConcurrencyGroupInfo[]>;
  /** The full group each of these pipelines waits for, if it is queued; pipelines not queued are left out. */
  listQueuedGroups(pipelineExecutionIds: readonly string[]): Promise<QueuedGroup[]>;
  /**
   * Counts the starts of rate-limited attempts, exactly across runners: in one transaction
   * serialized per bucket (a batch's buckets locked in name order), as many of a bucket's
   * requests as it has room for in the last `periodMs` (in request order; a bucket's `limit`
   * and `periodMs` are those of its first request in the batch) are recorded (`started`).
   * The others' tasks are given back unstarted — `ready` from the instant their bucket has room (a period later for each `limit` of tasks
   * already given back for that instant), its lease dropped and its claim undone (`attempt`
   * back, no start, no failure) — and `deferred` says when. Fenced on each lease: `lost`
   * writes nothing for it. Postgres counts on the database's clock (one time line for every
   * runner); SQLite on `now`. Results in request order.
   */
  startRateLimited(requests: readonly RateLimitedStart[]): Promise<RateLimitedStartResult[]>;
  /**
   * Gives a claimed task back unstarted (its `notBefore` lies ahead): `ready` from
   * `availableAt`, its lease dropped and its claim undone (`attempt` back, no start, no
   * failure). Fenced on the lease: false when it was lost, and nothing is written.
   */
  deferTask(request: DeferTaskRequest): Promise<boolean>;
  /**
   * Stores a signal for an execution, once per (execution, name), in one transaction with its
   * pipeline row locked: a `ready` wait task of that signal whose availableAt lies ahead becomes
   * claimable now (on Postgres, other processes are told at the commit).
   */
  sendSignal(request: SendSignalRequest): Promise<SendSignalResult>;
  /**
   * A claimed wait task looks for its signal, in one transaction that holds its pipeline row
   * (so that a signal sent meanwhile either is seen here or wakes the task it gives back):
   * `signalled` with the payload (the task stays leased: the caller completes it); else, with
   * `sleepUntil`, the task is given back unstarted until then as {@link deferTask} does
   * (`waiting`, or `lost` without the lease); else `timedOut` (nothing written: the caller
   * fails it).
   */
  waitForSignal(request: WaitForSignalRequest): Promise<WaitForSignalResult>;
  /**
   * Starts a claimed map task's instances, fenced on its lease: one `ready` row per item
   * (claimable now, the pipeline's priority), and the task itself parked under MAP_LEASE_OWNER
   * until they settle it (see map.ts and {@link finishTasks}). False when the lease was lost:
   * nothing written.
   */
  startMap(request: StartMapRequest): Promise<boolean>;
  /** A page of the instances of a pipeline's map task, in item order (empty before it mapped, or for another task). */
  listMapInstances(pipelineExecutionId: string, taskId: string, page: Page): Promise<TaskRow[]>;
  /** The instance counts of each map task of a pipeline that has instances, in task order. */
  countMapInstances(pipelineExecutionId: string): Promise<MapInstanceCounts[]>;
  /** Cancels a non-terminal pipeline and its non-terminal tasks; null when unknown. */
  cancelPipeline(id: string, now: Date): Promise<PipelineRow | null>;
  /** Pauses a pending or running pipeline; running tasks go back to ready (not a failure). */
  pausePipeline(id: string, reason: string | null, now: Date): Promise<PipelineRow | null>;
  /** Resumes a paused pipeline. */
  resumePipeline(id: string, now: Date): Promise<PipelineRow | null>;
  /**
   * Runs a `failed` or `cancelled` pipeline again, in one transaction that first locks its
   * row: the pipeline becomes `running` (no error, no completion time, `remainingTasks` =
   * `tasks.length`, `failedTasks` 0) and each listed task `ready` or `not_started` with its
   * `pendingDeps`, `availableAt` = now and no lease, its attempt counters kept. Other tasks
   * are untouched (completed ones keep their outputs). A pipeline with concurrency groups
   * re-enters their queue instead: it becomes `pending`, its `ready` tasks `not_started`, and
   * {@link admitQueued} starts it when its groups have room. Returns the pipeline after the retry;
   * the row as it is, unchanged, when it was in another status; null when unknown.
   */
  retryPipeline(id: string, tasks: readonly RetriedTask[], now: Date): Promise<PipelineRow | null>;
  /** Tasks `ready` now (availableAt passed) and pipelines `running`: the load gauges. */
  countWork(now: Date): Promise<{ readyTasks: number; runningPipelines: number }>;
  /** Running tasks whose lease expired before `now`: their runner died or stalled, and no runner has taken them over yet. */
  countStalledTasks(now: Date): Promise<number>;
  /**
   * Deletes up to `batchSize` terminal pipelines (and their tasks) completed before `before`,
   * except a cron pipeline whose ledger row is still `claimed`: recovery links it by key.
   */
  deleteTerminalPipelines(before: Date, batchSize: number): Promise<number>;
  /** Deletes up to `batchSize` rate-limit starts that no window counts after `before` (their bucket went quiet). */
  deleteExpiredRateLimitStarts(before: Date, batchSize: number): Promise<number>;
}
