import type { Context } from './context.js';
import type { WaitingFor } from './flow-control.js';
import type { Json } from './json.js';

/** Lifecycle of a pipeline execution. Terminal: completed, failed, cancelled. */
export type PipelineStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled' | 'paused';

/** Lifecycle of one task in a pipeline. Terminal: completed, failed, skipped, cancelled. */
export type TaskStatus = 'not_started' | 'ready' | 'running' | 'completed' | 'failed' | 'skipped' | 'cancelled';

/**
 * Options of {@link PipelineExecutor.execute} and {@link PipelineExecutor.executeAsync}. A key
 * not listed here (a typo such as `idempotencykey`) raises ValidationError naming the nearest one.
 */
export interface ExecuteOptions {
  /** A second call with the same key returns the first execution and writes nothing. */
  idempotencyKey?: string;
  /** execute(): how long to wait for the result. @default the runner's pipelineTimeoutMs */
  timeoutMs?: number;
  /**
   * Delayed start: the pipeline stays `pending` and none of its tasks is claimable before
   * this instant (like pg-boss's `startAfter`). A past instant starts it at once.
   */
  runAt?: Date;
  /** Set when a cron occurrence starts the pipeline; passed to tasks as `info.scheduledTime`. */
  scheduledTime?: Date;
  /** Set with `scheduledTime` by the cron scheduler: the schedule whose occurrence started the pipeline. */
  scheduleId?: string;
  /** Integer -1000..1000; higher is claimed first. @default the workflow's priority (0 unless it names one) */
  priority?: number;
  /** Names the group of every keyed concurrency rule, instead of the value its `key` reads from the context. */
  concurrencyKey?: string;
}

/** How one attempt of a task ended. */
export type AttemptOutcome = 'completed' | 'failed' | 'lease_expired' | 'timed_out' | 'released';

/** One attempt of a task: which runner ran it, when, and how it ended. */
export interface TaskAttempt {
  /** 1-based; the attempt number the task saw as `info.attempt`. */
  attempt: number;
  /** The runner that held the attempt's lease (for `lease_expired`, the one that lost it); null when not recorded. */
  runnerId: string | null;
  startedAt: Date;
  /** When it ended; for `lease_expired`, when its lease expired. */
  endedAt: Date;
  outcome: AttemptOutcome;
  /** The failure of a `failed`, `timed_out` or `lease_expired` attempt. */
  error?: string;
}

/** Outcome of one task. */
export interface TaskResult {
  taskId: string;
  status: TaskStatus;
  attempts: number;
  startedAt?: Date;
  completedAt?: Date;
  durationMs?: number;
  /** The message of the last failed attempt's error, then its stack frames, one per line. */
  error?: string;
  /** A completed task's own context delta: the keys it set and deleted. */
  output?: { set: Record<string, Json>; deleted: string[] };
  /** Every attempt that ended, oldest first (a running attempt is not listed until it ends). */
  attemptHistory: TaskAttempt[];
  /**
   * A `ready` wait task's signal deadline, set by its first wait; absent before that, when its
   * `waitFor` has no timeout, and for every other task.
   */
  waitsUntil?: Date;
  /** A map task that has mapped: its instances by status (the JSON API lists them). */
  instances?: { total: number; completed: number; failed: number; running: number };
}

/**
 * One instance of a map task: an item and how its run went, as `OrreryClient.listMapInstances`
 * lists them. Every field is present (null when unknown yet), so a JSON reader sees one shape.
 */
export interface MapInstance {
  /** The item's position in the list `map` returned, from 0. */
  index: number;
  /** The item itself. */
  item: Json;
  status: TaskStatus;
  /** Claims so far (`info.attempt` of the latest). */
  attempts: number;
  startedAt: Date | null;
  completedAt: Date | null;
  /** The last failed attempt's error; null when none failed. */
  error: string | null;
  /** What `run` returned for the item (`undefined` as null); null until it completes. */
  result: Json;
}

/** Everything known about a pipeline execution. */
export interface PipelineResult {
  executionId: string;
  workflowName: string;
  workflowVersion: string;
  status: PipelineStatus;
  createdAt: Date;
  startedAt?: Date;
  completedAt?: Date;
  durationMs?: number;
  /** deepMerge(input, outputs of every completed task in canonical order). */
  finalContext: Record<string, Json>;
  tasks: TaskResult[];
  error?: string;
}

/** A pipeline result without its context and tasks, as listed newest first. */
export type PipelineSummary = Omit<PipelineResult, 'finalContext' | 'tasks'> & {
  /** The schedule whose occurrence started it; null when no schedule did. */
  scheduleId: string | null;
  /** The occurrence's scheduled time; null when no schedule started it. */
  scheduledTime: Date | null;
  /** Its delayed start (ExecuteOptions.runAt); null when it was due at once. */
  runAt: Date | null;
  /** Its priority: higher is claimed first. */
  priority: number;
  /** Why a `pending` pipeline has not started yet: its `runAt`, or a full concurrency group; else null. */
  waitingFor: WaitingFor | null;
};

/** A handle on a started pipeline. */
export interface PipelineExecution {
  id: string;
  workflowName: string;
  /** Resolves with the result once the pipeline is terminal. @throws PipelineTimeoutError */
  wait(options?: { timeoutMs?: number }): Promise<PipelineResult>;
  status(): Promise<PipelineStatus>;
  cancel(): Promise<void>;
}

/** Filter of {@link PipelineExecutor.listExecutions}. */
export interface ListExecutionsFilter {
  workflowName?: string;
  status?: PipelineStatus;
  /** Only pipelines started by this schedule (its id). */
  scheduleId?: string;
  limit?: number;
  offset?: number;
}

/**
 * Starts and tracks pipelines. The cron scheduler hands occurrences to any implementation;
 * `DefaultRunner` is the durable one.
 */
export interface PipelineExecutor {
  /** Runs a pipeline and resolves with its result, whatever the outcome. */
  execute(
    workflowName: string,
    context?: Context | Record<string, Json>,
    options?: ExecuteOptions,
  ): Promise<PipelineResult>;
  /** Commits a pipeline and its tasks, then returns a handle without waiting for it. */
  executeAsync(
    workflowName: string,
    context?: Context | Record<string, Json>,
    options?: ExecuteOptions,
  ): Promise<PipelineExecution>;
  getExecutionStatus(executionId: string): Promise<PipelineStatus>;
  getExecutionResult(executionId: string): Promise<PipelineResult>;
  cancelExecution(executionId: string): Promise<void>;
  pauseExecution(executionId: string, reason?: string): Promise<void>;
  resumeExecution(executionId: string): Promise<void>;
  listExecutions(filter?: ListExecutionsFilter): Promise<PipelineSummary[]>;
}
