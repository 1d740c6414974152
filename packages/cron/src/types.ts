import type {
  CatchupPolicy,
  CronExecutionRow,
  CronExecutionSource,
  CronExecutionStatus,
  Json,
  OverlapPolicy,
  ScheduleDst,
  ScheduleRow,
} from '@orreryjs/core';
import type { DstRules } from './expression/dst.js';

/** What `addCronSchedule` takes: a workflow, when to run it, and how to treat missed and overlapping runs. */
export interface CronScheduleInput {
  /**
   * Unique, not shaped like a UUID. Re-adding the same name with the same definition returns
   * the existing schedule (safe at every start-up); a different definition raises
   * `ScheduleConflictError`, or updates the schedule with `onConflict: 'update'`.
   * "Definition" is every field but `enabled`, compared after normalisation. Required, so
   * that adding a schedule at every start-up never adds a second copy.
   */
  name: string;
  /** A workflow registered with the runner, else `WorkflowNotFoundError`. */
  workflowName: string;
  /**
   * 5 fields, 6 with seconds first, or 7 with a year last (1970-2199); names (MON-FRI, JAN);
   * Quartz `L` `L-n` `nW` `LW` `d#k` `dL` `?`; `@yearly` `@monthly` `@weekly` `@daily`
   * `@hourly`; `@every <duration>` (`@every 90s`, 1s-366d, counted from `startAt`, else the
   * Unix epoch). Stored in its canonical form: 6 fields (`@daily` → `0 0 0 * * *`), 7 only
   * when a year is restricted, `@every` with the largest units (`@every 90m` → `@every 1h30m`).
   */
  cronExpression: string;
  /**
   * IANA zone whose wall clock the expression is read in.
   * @default 'UTC'
   */
  timezone?: string;
  /**
   * Whether the scheduler fires it. Never overwritten by re-adding the schedule.
   * @default true
   */
  enabled?: boolean;
  /**
   * Input context of every pipeline it starts; the schedule keys override keys of the same name.
   * @default {}
   */
  context?: Record<string, Json>;
  /**
   * Missed occurrences (claimed later than the misfire threshold): `skip` runs none,
   * `run_once` the latest one, `run_all` every one, oldest first.
   * @default 'run_once'
   */
  catchupPolicy?: CatchupPolicy;
  /**
   * What an occurrence does while an earlier one is still active (claimed, buffered, or its
   * pipeline pending, running or paused): `allow` runs it anyway; `skip` records it `skipped`;
   * `buffer_one` keeps the newest `buffered` until the active one ends (an older buffered
   * one is skipped); `buffer_all` keeps every one, handed off one at a time, oldest first;
   * `cancel_other` cancels the active pipeline and runs the new one at once (an earlier
   * occurrence still waiting for its hand-off is `skipped` and never starts). A disabled
   * schedule's buffered occurrences are `skipped`.
   * @default 'allow'
   */
  overlapPolicy?: OverlapPolicy;
  /**
   * A failed pipeline of this schedule disables it, with the note "paused after failure of
   * execution <id>" and a `cron:paused` event: at once when the pipeline ends, and at the
   * schedule's next due slot if that runner died first (its newest pipeline failed after it
   * was last enabled), instead of running that slot. Only failures after the schedule was
   * last enabled, or after `pauseOnFailure` was switched on, count.
   * @default false
   */
  pauseOnFailure?: boolean;
  /**
   * After this many scheduler hand-offs (`runCount`) the schedule disables itself, with the
   * note "maxRuns reached". Manual triggers and backfills do not count.
   * @default null (no limit)
   */
  maxRuns?: number | null;
  /**
   * Overrides the DST rules for this schedule: `repeated` fires a wall time repeated at
   * fall-back at its `first` instance, its `last`, or `both`; `gap` `shift`s a wall time
   * inside a spring-forward gap to the offset before the gap, or `skip`s it that day. A
   * missing field keeps the expression's default rule; null: the default rules (an update
   * with null drops the override).
   * @default the default rules (see `nextOccurrences`)
   */
  dst?: DstRules | null;
  /**
   * Free text shown with the schedule (why it is paused, who owns it). Not part of the
   * definition: re-adding a schedule without a note keeps the stored one.
   */
  note?: string | null;
  /**
   * On-time occurrences are handed off `hash(occurrence id) mod jitterMs` after their time;
   * the scheduled time stays nominal. Catch-up, manual and backfill occurrences are not delayed.
   * @default 0
   */
  jitterMs?: number;
  /** Start of the active window, included; null: none (an update clears it). */
  startAt?: Date | null;
  /** End of the active window, excluded; null: none (an update clears it). */
  endAt?: Date | null;
}

/** A stored cron schedule. */
export interface CronSchedule
  extends Required<Omit<CronScheduleInput, 'startAt' | 'endAt' | 'name' | 'note' | 'dst' | 'maxRuns'>> {
  id: string;
  /** The stored note; null when there is none. Enabling the schedule clears it. */
  note: string | null;
  /** The schedule's DST choices with both rules filled in; null: the default rules. */
  dst: ScheduleDst | null;
  maxRuns: number | null;
  /** Occurrences the scheduler has handed off so far (what maxRuns counts). */
  runCount: number;
  /** Null only for a schedule added before names were required. */
  name: string | null;
  startAt: Date | null;
  endAt: Date | null;
  /** Nominal time of the next occurrence not yet claimed; null when disabled or past `endAt`. */
  nextRunAt: Date | null;
  /** Scheduled time of the latest occurrence the scheduler claimed to run. */
  lastRunAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** One ledger entry: an occurrence, or for `missed` a run of `missedCount` slots that did not run. */
export interface CronExecution {
  id: string;
  scheduleId: string;
  scheduledTime: Date;
  /** When the handoff was due: `scheduledTime` plus jitter. */
  fireAt: Date;
  claimedAt: Date;
  status: CronExecutionStatus;
  source: CronExecutionSource;
  /** For a `missed` row: how many slots it stands for (1 or more); 0 otherwise. */
  missedCount: number;
  pipelineExecutionId: string | null;
  handedOffAt: Date | null;
  recoveryAttempts: number;
  recovered: boolean;
  /** Why recovery gave up on an `abandoned` row. */
  abandonReason: string | null;
}

/** Ledger counts of occurrences scheduled since a given time. */
export interface CronExecutionStats {
  totalExecutions: number;
  successfulExecutions: number;
  /** `claimed` for longer than the lost threshold since their fire time and their claim. */
  lostExecutions: number;
  skippedExecutions: number;
  missedExecutions: number;
  abandonedExecutions: number;
  /**
   * 100·handed_off / (handed_off + lost + abandoned); null when there are none: a rate with
   * no attempts is unknown, not 0 % (DESIGN.md "Observability" supersedes the Runner API
   * sketch's "0 when none").
   */
  successRate: number | null;
  /**
   * Fire lag: mean of handedOffAt − scheduledTime over handed-off `schedule` and `catchup`
   * occurrences (a backfill or a manual trigger is handed off when asked: it has no lateness);
   * null when there are none.
   */
  meanDelayMs: number | null;
  /** Fire lag at rank ceil(0.99 n) of the same n hand-offs as {@link meanDelayMs}; null when there are none. */
  p99DelayMs: number | null;
}

/** What recovery has done, over the whole ledger. */
export interface RecoveryStats {
  /** Recovery attempts made (attempts refunded after a database error are not counted). */
  totalRecoveryAttempts: number;
  /** Occurrences a recovery attempt handed off. */
  successfulRecoveries: number;
  /** Attempts that did not hand off: totalRecoveryAttempts − successfulRecoveries. */
  failedRecoveries: number;
  /** Occurrences abandoned after at least one recovery attempt. */
  abandonedRecoveries: number;
  /** 100·successfulRecoveries / totalRecoveryAttempts; null when there are none (no attempts: no rate). */
  recoverySuccessRate: number | null;
}

/** The public view of a stored schedule. */
export function toCronSchedule(row: ScheduleRow): CronSchedule {
  return {
    id: row.id,
    name: row.name,
    workflowName: row.workflowName,
    cronExpression: row.cronExpression,
    timezone: row.timezone,
    enabled: row.enabled,
    context: row.context,
    catchupPolicy: row.catchupPolicy,
    overlapPolicy: row.overlapPolicy,
    jitterMs: row.jitterMs,
    pauseOnFailure: row.pauseOnFailure,
    maxRuns: row.maxRuns,
    runCount: row.runCount,
    dst: row.dst,
    note: row.note,
    startAt: row.startAt,
    endAt: row.endAt,
    nextRunAt: row.nextRunAt,
    lastRunAt: row.lastRunAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** The public view of a ledger row. */
export function toCronExecution(row: CronExecutionRow): CronExecution {
  return {
    id: row.id,
    scheduleId: row.scheduleId,
    scheduledTime: row.scheduledTime,
    fireAt: row.fireAt,
    claimedAt: row.claimedAt,
    status: row.status,
    source: row.source,
    missedCount: row.missedCount,
    pipelineExecutionId: row.pipelineExecutionId,
    handedOffAt: row.handedOffAt,
    recoveryAttempts: row.recoveryAttempts,
    recovered: row.recovered,
    abandonReason: row.abandonReason,
  };
}
