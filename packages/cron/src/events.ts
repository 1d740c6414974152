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

/** An occurrence started nothing because an earlier one of its schedule was still active. */
export interface CronSkippedEvent {
  scheduleId: string;
  scheduleName: string | null;
  occurrenceId: string;
  scheduledTime: Date;
  reason: 'overlap';
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
  /** An occurrence of an `overlapPolicy: 'skip'` schedule was skipped. */
  'cron:skipped': [CronSkippedEvent];
  /** Recovery picked up a lost occurrence. */
  'cron:lost': [CronLostEvent];
  /** Recovery handed off a lost occurrence. */
  'cron:recovered': [CronRecoveredEvent];
  /** Recovery gave up on an occurrence (attempt or age limit, schedule disabled or deleted). */
  'cron:abandoned': [CronAbandonedEvent];
}

/** How the service reports events: the runner passes `(event, ...args) => this.emit(event, ...args)`. */
export type CronEmit = <K extends keyof CronEvents>(event: K, ...args: CronEvents[K]) => void;
