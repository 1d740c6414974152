import type { CronExecutionSource } from '@orreryjs/core';

/** An occurrence was handed to the executor and linked to its pipeline. */
export interface CronFiredEvent {
  scheduleId: string;
  scheduleName: string | null;
  occurrenceId: string;
  scheduledTime: Date;
  source: CronExecutionSource;
  pipelineExecutionId: string;
  /** handedOffAt − scheduledTime, jitter included. */
  lagMs: number;
}

/**
 * An occurrence started nothing because of overlap: an earlier one of its `skip` schedule was
 * still active, or a newer one of its `cancel_other` schedule replaced it before its hand-off.
 */
export interface CronSkippedEvent {
  scheduleId: string;
  scheduleName: string | null;
  occurrenceId: string;
  scheduledTime: Date;
  reason: 'overlap';
}

/** Slots that no policy runs (caught up past, or skipped by the catch-up policy) were recorded as one `missed` row. */
export interface CronMissedEvent {
  scheduleId: string;
  scheduleName: string | null;
  /** The id of the `missed` row. */
  occurrenceId: string;
  /** The first missed slot. */
  scheduledTime: Date;
  /** How many slots the row stands for. */
  missedCount: number;
}

/** An occurrence of a `buffer_one` or `buffer_all` schedule waits for the active one to end. */
export interface CronBufferedEvent {
  scheduleId: string;
  scheduleName: string | null;
  occurrenceId: string;
  scheduledTime: Date;
}

/** A schedule disabled itself: `pauseOnFailure` saw a failed pipeline, or `maxRuns` was reached. */
export interface CronPausedEvent {
  scheduleId: string;
  scheduleName: string | null;
  /** The note stored on the schedule, such as "paused after failure of execution <id>". */
  note: string;
  reason: 'failure' | 'max_runs';
  /** The failed pipeline, for `reason: 'failure'`. */
  pipelineExecutionId: string | null;
}

/** Recovery found an occurrence still `claimed` past the lost threshold and is handing it off again. */
export interface CronLostEvent {
  scheduleId: string;
  occurrenceId: string;
  scheduledTime: Date;
  /** 1-based number of this recovery attempt. */
  recoveryAttempt: number;
}

/** Recovery linked a lost occurrence to its (possibly pre-existing) pipeline. */
export interface CronRecoveredEvent {
  scheduleId: string;
  occurrenceId: string;
  scheduledTime: Date;
  pipelineExecutionId: string;
  recoveryAttempt: number;
}

/** Recovery gave up on an occurrence; the ledger row is `abandoned` with this reason. */
export interface CronAbandonedEvent {
  scheduleId: string;
  occurrenceId: string;
  scheduledTime: Date;
  reason: string;
}

/**
 * The events a {@link CronService} emits, as an eventemitter3 map: each payload is one object.
 * The runner merges this map into its own. Events only report; no control flow depends on them.
 */
export interface CronEvents {
  /** An occurrence was handed off (`lagMs` = handedOffAt − scheduledTime). */
  'cron:fired': [CronFiredEvent];
  /** An occurrence was skipped for overlap (`skip`, or replaced under `cancel_other`). */
  'cron:skipped': [CronSkippedEvent];
  /** Missed slots were recorded as one `missed` ledger row (`missedCount` slots). */
  'cron:missed': [CronMissedEvent];
  /** An occurrence was kept `buffered` behind an active one (overlap `buffer_one`/`buffer_all`). */
  'cron:buffered': [CronBufferedEvent];
  /** A schedule disabled itself after a failure (`pauseOnFailure`) or at `maxRuns`. */
  'cron:paused': [CronPausedEvent];
  /** Recovery picked up a lost occurrence. */
  'cron:lost': [CronLostEvent];
  /** Recovery handed off a lost occurrence. */
  'cron:recovered': [CronRecoveredEvent];
  /** Recovery gave up on an occurrence (attempt or age limit, schedule disabled or deleted). */
  'cron:abandoned': [CronAbandonedEvent];
}

/** How the service reports events: the runner passes `(event, ...args) => this.emit(event, ...args)`. */
export type CronEmit = <K extends keyof CronEvents>(event: K, ...args: CronEvents[K]) => void;
