import type { ContextDelta } from './context.js';
import type { CronExecutionRow, CronExecutionSource, CronExecutionStatus, NewCronExecution } from './cron-store.js';
import { IdempotencyConflictError } from './errors.js';
import type {
  ClaimTasksRequest,
  FinishTaskResult,
  LeaseRef,
  NewPipeline,
  PipelineRow,
  RegisteredTasks,
  TaskOutcome,
  TaskRow,
} from './execution-store.js';
import type { PipelineStatus, TaskStatus } from './executor.js';
import { DEFAULT_PRIORITY, type PipelineGroup } from './flow-control.js';

/*
 * What every storage adapter decides the same way and that is not SQL: the status sets its
 * filters name, the columns an outcome writes, the values a new row starts with. Adapters
 * render these into their dialect; they never restate them.
 */

/** Pipelines whose tasks may be claimed. */
/** Every pipeline status, in the order messages and help list them. */
export const PIPELINE_STATUSES = [
  'pending',
  'running',
  'completed',
  'failed',
  'cancelled',
  'paused',
] as const satisfies readonly PipelineStatus[];
export const ACTIVE_PIPELINE_STATUSES = ['pending', 'running'] as const satisfies readonly PipelineStatus[];
/** Pipelines that have not ended: they can still be paused, cancelled or finished. */
export const UNFINISHED_PIPELINE_STATUSES = [
  'pending',
  'running',
  'paused',
] as const satisfies readonly PipelineStatus[];
/** Pipelines that have ended; retention deletes them. */
export const TERMINAL_PIPELINE_STATUSES = [
  'completed',
  'failed',
  'cancelled',
] as const satisfies readonly PipelineStatus[];
const TERMINAL_PIPELINES: ReadonlySet<PipelineStatus> = new Set(TERMINAL_PIPELINE_STATUSES);
/** Whether a pipeline in `status` has ended (one of {@link TERMINAL_PIPELINE_STATUSES}). */
export function isTerminalPipelineStatus(status: PipelineStatus): boolean {
  return TERMINAL_PIPELINES.has(status);
}
/**
 * Terminal pipelines that `retryExecution` can set running again: what a process remembers of
 * their end may be undone by a retry made elsewhere. Only `completed` is final for good.
 */
export const RETRYABLE_PIPELINE_STATUSES = ['failed', 'cancelled'] as const satisfies readonly PipelineStatus[];
/** Tasks that have ended: their outcome is final. */
export const TERMINAL_TASK_STATUSES = [
  'completed',
  'failed',
  'skipped',
  'cancelled',
] as const satisfies readonly TaskStatus[];

/**
 * Occurrences still in flight: claimed but not handed off yet, or buffered behind an active one.
 * Retention never deletes them; every other status is where an occurrence ends.
 */
export const OPEN_OCCURRENCE_STATUSES = ['claimed', 'buffered'] as const satisfies readonly CronExecutionStatus[];
/** Occurrences whose slot a backfill may take back, when no pipeline was ever linked to them. */
export const RECLAIMABLE_OCCURRENCE_STATUSES = [
  'missed',
  'abandoned',
] as const satisfies readonly CronExecutionStatus[];

/** Occurrences the scheduler created (not a manual trigger or a backfill, which are explicit requests). */
export const SCHEDULER_OCCURRENCE_SOURCES = ['schedule', 'catchup'] as const satisfies readonly CronExecutionSource[];

/**
 * Occurrences whose hand-off has a lateness, the ones fire lag (stats' mean and p99 delay, the
 * fire-lag histogram) counts: the scheduler's. A backfill or a manual trigger is handed off
 * when asked, however old its slot, so its `handedOffAt - scheduledTime` is no delay.
 */
export const FIRE_LAG_SOURCES: readonly CronExecutionSource[] = SCHEDULER_OCCURRENCE_SOURCES;

/** Column values an attempt's outcome writes to its task row; `failed` is 1 when it counts as a failed attempt. */
export interface TaskOutcomeColumns {
  status: TaskStatus;
  output: ContextDelta | null;
  error: string | null;
  failed: 0 | 1;
  availableAt: Date | null;
  completedAt: Date | null;
  /** How the attempt ended when it did not complete: the outcome its `attempt_history` entry records, else null. */
  attemptOutcome: 'failed' | 'timed_out' | null;
}

/** The columns {@link TaskOutcome} writes to its task row at `now`. */
export function taskOutcomeColumns(outcome: TaskOutcome, now: Date): TaskOutcomeColumns {
  switch (outcome.status) {
    case 'completed':
      return {
        status: 'completed',
        output: outcome.output,
        error: null,
        failed: 0,
        availableAt: null,
        completedAt: now,
        attemptOutcome: null,
      };
    case 'failed':
      return {
        status: 'failed',
        output: null,
        error: outcome.error,
        failed: 1,
        availableAt: null,
        completedAt: now,
        attemptOutcome: outcome.ran === false ? null : outcome.timedOut === true ? 'timed_out' : 'failed',
      };
    case 'skipped':
      return {
        status: 'skipped',
        output: null,
        error: outcome.reason,
        failed: 0,
        availableAt: null,
        completedAt: now,
        attemptOutcome: null,
      };
    case 'retry':
      return {
        status: 'ready',
        output: null,
        error: outcome.error,
        failed: 1,
        availableAt: outcome.availableAt,
        completedAt: null,
        attemptOutcome: outcome.timedOut === true ? 'timed_out' : 'failed',
      };
  }
}

/**
 * The status a new task row starts in: ready when it depends on nothing, unless its pipeline
 * is queued for a concurrency group (then its admission readies it).
 */
export function newTaskStatus(pendingDeps: number, queued = false): TaskStatus {
  return pendingDeps === 0 && !queued ? 'ready' : 'not_started';
}

/** True when a new pipeline joins concurrency groups: it is queued until admitted. */
export function isQueued(
  pipeline: Pick<NewPipeline, 'concurrency'>,
): pipeline is NewPipeline & { concurrency: PipelineGroup[] } {
  return (pipeline.concurrency?.length ?? 0) > 0;
}

/** The slots a new pipeline takes in its groups' queues: ordered by priority, then `runAt`, else creation. */
export function newSlots(pipeline: NewPipeline): NewSlot[] {
  return (pipeline.concurrency ?? []).map((group) => ({
    pipelineExecutionId: pipeline.id,
    group,
    priority: pipeline.priority ?? DEFAULT_PRIORITY,
    queuedAt: pipeline.runAt ?? pipeline.now,
  }));
}

/** A pipeline's place in one group's queue, as the adapters insert it. */
export interface NewSlot {
  pipelineExecutionId: string;
  group: PipelineGroup;
  priority: number;
  queuedAt: Date;
}

/** A new ledger row as stored: its recovery and handoff fields empty. */
export function newCronExecutionRow(row: NewCronExecution): CronExecutionRow {
  return {
    ...row,
    pipelineExecutionId: null,
    handedOffAt: null,
    recoveryAttempts: 0,
    recovered: false,
    nextRecoveryAt: null,
    recoveryLeaseOwner: null,
    recoveryLeaseExpiresAt: null,
    abandonReason: null,
  };
}

/** Separator of {@link registeredTaskKeys}: a control character no workflow or task id contains in practice. */
export const TASK_KEY_SEPARATOR = '\u001f';

/** Keys by the registered list they were made from: a runner claims with one list until it registers more. */
const taskKeysOf = new WeakMap<readonly RegisteredTasks[], readonly string[]>();

/**
 * `workflow<US>task` keys of every registered (workflow, task) pair: what a claim matches tasks
 * against, made once per list.
 */
export function registeredTaskKeys(registered: readonly RegisteredTasks[]): readonly string[] {
  let keys = taskKeysOf.get(registered);
  if (keys === undefined) {
    keys = registered.flatMap((r) => r.taskIds.map((id) => `${r.workflowName}${TASK_KEY_SEPARATOR}${id}`));
    taskKeysOf.set(registered, keys);
  }
  return keys;
}

/** The lease a claimed task row stands for, at the row's attempt. */
export function leaseOfTask(task: TaskRow): LeaseRef {
  return {
    taskExecutionId: task.id,
    pipelineExecutionId: task.pipelineExecutionId,
    taskId: task.taskId,
    attempt: task.attempt,
  };
}

/** A claim that can lease nothing (no registered task or no slot): adapters answer it without a statement. */
export function claimsNothing(request: ClaimTasksRequest): boolean {
  return request.limit <= 0 || !request.registered.some((r) => r.taskIds.length > 0);
}

/**
 * The pipelines of one write in the order their idempotency keys are taken: keyed ones by key
 * (code-unit order), then those without a key (fresh ids, which collide with nothing). Two
 * transactions inserting the same keys in opposite orders each wait for a key the other holds
 * uncommitted, a deadlock (Postgres 40P01); taking keys in one global order makes the later
 * writer wait for the earlier one's commit instead. The sort is stable, so of two pipelines of
 * one batch with the same key the first asked is still the one created.
 */
export function inKeyLockOrder<T extends Pick<NewPipeline, 'idempotencyKey'>>(pipelines: readonly T[]): T[] {
  const keyed = pipelines.filter((pipeline) => pipeline.idempotencyKey !== null);
  keyed.sort((a, b) => compareCodeUnits(a.idempotencyKey!, b.idempotencyKey!));
  return [...keyed, ...pipelines.filter((pipeline) => pipeline.idempotencyKey === null)];
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The error for an idempotency key that belongs to an execution of another workflow. */
export function idempotencyConflictError(
  key: string | null,
  holder: Pick<PipelineRow, 'id' | 'workflowName'>,
  workflowName: string,
): IdempotencyConflictError {
  return new IdempotencyConflictError(
    `Idempotency key "${key}" already belongs to execution ${holder.id} of workflow "${holder.workflowName}", not "${workflowName}"; use a key unique to this request.`,
  );
}

/**
 * Throws when a pipeline of the batch was not created because its key belongs to an execution
 * of another workflow: called inside the write's transaction, so the batch rolls back whole.
 * @throws IdempotencyConflictError naming the first such key.
 */
export function assertKeysHeldBySameWorkflow(
  pipelines: readonly NewPipeline[],
  results: ReadonlyArray<{ pipeline: PipelineRow; created: boolean }>,
): void {
  for (const [index, { pipeline, created }] of results.entries()) {
    const asked = pipelines[index]!;
    if (!created && pipeline.workflowName !== asked.workflowName) {
      throw idempotencyConflictError(asked.idempotencyKey, pipeline, asked.workflowName);
    }
  }
}

/** The concurrency groups of the pipelines a batch of outcomes ended: the slots its transaction gives on. */
export function groupsEndedBy(results: readonly FinishTaskResult[]): string[] {
  const groups = new Set<string>();
  for (const result of results) {
    for (const group of result.finishedPipeline?.concurrency ?? []) groups.add(group.group);
  }
  return [...groups];
}

/** The results with `slotsGivenOn` set where a pipeline of groups ended: its slots were given on in the batch. */
export function withSlotsGivenOn(results: FinishTaskResult[]): FinishTaskResult[] {
  return results.map((result) => (result.finishedPipeline?.concurrency ? { ...result, slotsGivenOn: true } : result));
}
