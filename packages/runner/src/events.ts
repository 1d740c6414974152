import type { PipelineStatus } from '@orreryjs/core';
import type { CronEvents } from '@orreryjs/cron';

/** A pipeline execution was committed (not emitted when an idempotency key returned an existing one). */
export interface PipelineCreatedEvent {
  executionId: string;
  workflowName: string;
  idempotencyKey: string | null;
  scheduledTime: Date | null;
}

/** A pipeline reached a terminal state in this process. */
export interface PipelineFinishedEvent {
  executionId: string;
  workflowName: string;
  status: PipelineStatus;
  /** From start (or creation, if it never started) to completion. */
  durationMs: number;
  /** The first task failure, for a failed pipeline. */
  error: string | null;
}

/** A pipeline was cancelled through this runner. */
export interface PipelineCancelledEvent {
  executionId: string;
  workflowName: string;
}

/** A failed or cancelled pipeline was set running again by `retryExecution`. */
export interface PipelineRetriedEvent {
  executionId: string;
  workflowName: string;
  /** The status it had before the retry. */
  previousStatus: 'failed' | 'cancelled';
  /** Tasks sent back to run: failed, cancelled, and skipped because an upstream task failed. */
  retriedTasks: string[];
}

/** Identifies one attempt of one task. */
export interface TaskAttemptEvent {
  executionId: string;
  workflowName: string;
  taskId: string;
  /** 1-based. */
  attempt: number;
}

/** A task attempt succeeded and its output was committed. */
export interface TaskCompletedEvent extends TaskAttemptEvent {
  durationMs: number;
}

/** A task attempt failed; `willRetry` says whether another attempt is scheduled. */
export interface TaskFailedEvent extends TaskAttemptEvent {
  error: string;
  /** The stack of the Error the task threw; null for a timeout, a lost lease or a non-Error value. */
  stack: string | null;
  willRetry: boolean;
  /** When the next attempt may start, if one will. */
  retryAt: Date | null;
}

/** A task was skipped: its trigger rule was not met or its `when` returned false. */
export interface TaskSkippedEvent extends TaskAttemptEvent {
  reason: string;
}

/**
 * Pipeline and task events of {@link DefaultRunner}, each with one object payload so fields
 * can be added safely. Events only report what happened in this process; listeners that
 * throw are logged and ignored.
 */
export interface PipelineEvents {
  /** A pipeline and its task rows were committed by `executeAsync` or `execute`. */
  'pipeline:created': [PipelineCreatedEvent];
  /** A pipeline ended `completed` (emitted by the runner that finished its last task). */
  'pipeline:completed': [PipelineFinishedEvent];
  /** A pipeline ended `failed` (emitted by the runner that finished its last task). */
  'pipeline:failed': [PipelineFinishedEvent];
  /** A pipeline was cancelled by `cancelExecution` on this runner. */
  'pipeline:cancelled': [PipelineCancelledEvent];
  /** A failed or cancelled pipeline runs again from its failed tasks (`retryExecution`). */
  'pipeline:retried': [PipelineRetriedEvent];
  /** A task attempt started running on this runner. */
  'task:started': [TaskAttemptEvent];
  /** A task attempt succeeded. */
  'task:completed': [TaskCompletedEvent];
  /** A task attempt failed (timeout, error, lost lease taken over); `willRetry` tells what follows. */
  'task:failed': [TaskFailedEvent];
  /** A task was skipped by its trigger rule or its `when`. */
  'task:skipped': [TaskSkippedEvent];
}

/**
 * Every event of {@link DefaultRunner}: the pipeline and task events above, plus the cron
 * events (`cron:fired`, `cron:skipped`, `cron:buffered`, `cron:missed`, `cron:lost`,
 * `cron:recovered`, `cron:abandoned`, `cron:paused`)
 * declared by `@orreryjs/cron`, which its CronService emits through the runner.
 */
export type RunnerEvents = PipelineEvents & CronEvents;

/** Emits one runner event (through emitSafely, so a throwing listener is logged, not thrown). */
export type EmitEvent = <K extends keyof RunnerEvents>(event: K, payload: RunnerEvents[K][0]) => void;
