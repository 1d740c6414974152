import type { NewPipeline } from './execution-store.js';
import type { PipelineStatus } from './executor.js';
import type { JsonObject } from './json.js';

/** What to do with occurrences that were missed while no runner was running. */
export type CatchupPolicy = 'skip' | 'run_once' | 'run_all';
/** What an occurrence does while an earlier one of the schedule is still active. */
export type OverlapPolicy = 'allow' | 'skip' | 'buffer_one' | 'buffer_all' | 'cancel_other';
/** Ledger state of an occurrence. */
export type CronExecutionStatus = 'claimed' | 'buffered' | 'handed_off' | 'skipped' | 'missed' | 'abandoned';
/** A schedule's own DST choices (see `dst` in DESIGN.md); null keeps the default rules. */
export interface ScheduleDst {
  repeated: 'first' | 'last' | 'both';
  gap: 'shift' | 'skip';
}
/** What created an occurrence. */
export type CronExecutionSource = 'schedule' | 'catchup' | 'manual' | 'backfill';

/** A stored cron schedule. `version` is the compare-and-set token of every update. */
export interface ScheduleRow {
  id: string;
  name: string | null;
  workflowName: string;
  /** Normalised expression, as stored. */
  cronExpression: string;
  timezone: string;
  enabled: boolean;
  context: JsonObject;
  catchupPolicy: CatchupPolicy;
  overlapPolicy: OverlapPolicy;
  jitterMs: number;
  /** A failed pipeline of the schedule disables it. */
  pauseOnFailure: boolean;
  /**
   * When the schedule was created, last enabled, or had `pauseOnFailure` switched on:
   * `pauseOnFailure` counts only pipelines that failed after it, so a schedule resumed after
   * a failure fires again.
   */
  enabledAt: Date;
  /** After this many scheduler hand-offs the schedule disables itself; null: no limit. */
  maxRuns: number | null;
  /** Occurrences the scheduler has claimed to run (what maxRuns counts). */
  runCount: number;
  dst: ScheduleDst | null;
  /** Free text shown with the schedule: why it is paused, who owns it. */
  note: string | null;
  startAt: Date | null;
  endAt: Date | null;
  /** Nominal time of the next occurrence not yet claimed; null when there is none. */
  nextRunAt: Date | null;
  lastRunAt: Date | null;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

/** The writes of a declarative schedule sync: see {@link CronStore.applyScheduleSync}. */
export interface ScheduleSyncWrites {
  inserts: ScheduleRow[];
  updates: Array<{
    id: string;
    expectedVersion: number;
    patch: Partial<Omit<ScheduleRow, 'id' | 'version' | 'createdAt'>>;
  }>;
  deletes: Array<{ id: string; expectedVersion: number }>;
}

/** A ledger row: one occurrence (or, for `missed`, a run of `missedCount` slots). */
export interface CronExecutionRow {
  id: string;
  scheduleId: string;
  /** Snapshot at claim: handoff and recovery use these, not the live schedule. */
  workflowName: string;
  context: JsonObject;
  scheduledTime: Date;
  /** When the handoff is due: `scheduledTime` plus jitter. */
  fireAt: Date;
  claimedAt: Date;
  claimedBy: string;
  status: CronExecutionStatus;
  source: CronExecutionSource;
  missedCount: number;
  pipelineExecutionId: string | null;
  handedOffAt: Date | null;
  recoveryAttempts: number;
  recovered: boolean;
  /** Earliest time the next recovery attempt may be made. */
  nextRecoveryAt: Date | null;
  recoveryLeaseOwner: string | null;
  recoveryLeaseExpiresAt: Date | null;
  /** Why the row was abandoned, for people reading the ledger. */
  abandonReason: string | null;
}

/** A new ledger row: the recovery fields start empty. */
export type NewCronExecution = Omit<
  CronExecutionRow,
  | 'pipelineExecutionId'
  | 'handedOffAt'
  | 'recoveryAttempts'
  | 'recovered'
  | 'nextRecoveryAt'
  | 'recoveryLeaseOwner'
  | 'recoveryLeaseExpiresAt'
  | 'abandonReason'
>;

/** What the scheduler decided for one due schedule inside the claim transaction. */
export interface SchedulePlan {
  occurrences: NewCronExecution[];
  nextRunAt: Date | null;
  lastRunAt: Date | null;
  /** The schedule's runCount after this plan; absent: unchanged. */
  runCount?: number;
  /** Disable the schedule with this note (maxRuns reached); null or absent leaves it enabled. */
  disableNote?: string | null;
  /** Turn the schedule's stored `buffered` rows into `skipped` (buffer_one keeps only the newest). */
  skipBuffered?: boolean;
  /**
   * Turn the schedule's stored `claimed` scheduler rows (source `schedule` or `catchup`) into
   * `skipped`: a newer `cancel_other` occurrence replaces them before they started anything.
   */
  skipClaimed?: boolean;
  /**
   * `cancel_other`: the active pipelines (from {@link DueScheduleState.activePipelineIds}, so in
   * this database) that the plan's new occurrence replaces. They are cancelled, with their
   * unfinished tasks, in the claim transaction itself: the replacement and the cancel commit
   * together, so no crash between them can leave the old pipeline running beside the new one.
   */
  cancelPipelineIds?: readonly string[];
}

/** The newest pipeline a schedule started, as the claim reads it for `pauseOnFailure`. */
export interface LatestSchedulePipeline {
  id: string;
  status: PipelineStatus;
  completedAt: Date | null;
}

/** Facts about a due schedule that its plan depends on, read under its row lock. */
export interface DueScheduleState {
  /** An earlier occurrence is `claimed` or `buffered`, or linked to a pending, running or paused pipeline. */
  hasActiveOccurrence: boolean;
  /** For a `cancel_other` schedule: the unfinished pipelines of its handed-off occurrences, to cancel. */
  activePipelineIds?: readonly string[];
  /**
   * Scheduled times in [nextRunAt, missedBefore) that already hold a (non-manual) ledger row,
   * e.g. slots backfilled during an outage: a `missed` summary must not claim them. Read only
   * for a schedule whose nextRunAt is before {@link ClaimDueRequest.missedBefore}; else empty.
   */
  takenSlots?: readonly Date[];
  /**
   * For a `pauseOnFailure` schedule: its newest pipeline by creation (null when it has none),
   * so that the plan pauses the schedule when that one ended `failed` after `enabledAt`, even
   * if the runner that ended it died before pausing it. Absent for other schedules.
   */
  latestPipeline?: LatestSchedulePipeline | null;
}

/** Input of {@link CronStore.claimDueSchedules}. */
export interface ClaimDueRequest {
  now: Date;
  /** Only schedules of these workflows are claimed. */
  workflowNames: readonly string[];
  limit: number;
  /** Slots before this are missed (now − misfire threshold): see {@link DueScheduleState.takenSlots}. */
  missedBefore?: Date;
  /**
   * Called synchronously, inside the transaction, once per locked due schedule; returns
   * null to leave the schedule untouched.
   */
  plan: (schedule: ScheduleRow, state: DueScheduleState) => SchedulePlan | null;
  /**
   * In-transaction handoff, when the executor shares this database: called synchronously,
   * inside the transaction, for each claimed occurrence whose `fireAt` has come; the pipeline
   * it returns is created under the occurrence id as idempotency key and linked, so phase 1,
   * the pipeline rows and the link commit together. Null leaves the row `claimed`, for the
   * two-phase path.
   */
  prepareHandoff?: (occurrence: CronExecutionRow) => NewPipeline | null;
}

/** Input of {@link CronStore.probeTick}. */
export interface TickProbeRequest {
  /** Only schedules of these workflows count for {@link TickProbe.earliestRunAt}. */
  workflowNames: readonly string[];
  /**
   * Read the earliest `nextRunAt` up to this instant (a tick passes its next regular tick), so
   * that a tick lands on the slot of a schedule another process wrote (a CLI, a deploy's sync,
   * another runner's retiming) instead of up to a poll interval after it. Bounded so that the
   * walk of the due index stays as short as a plain "anything due?".
   */
  until: Date;
}

/** What a tick's probe found: whether the claim and the release of buffered rows have anything to do. */
export interface TickProbe {
  /** The earliest `nextRunAt` up to `until` of an enabled schedule of the workflows; null when none. */
  earliestRunAt: Date | null;
  /** Whether any occurrence waits `buffered` (of any workflow: the release filters by workflow). */
  anyBuffered: boolean;
}

/** What a manual trigger does under its schedule's overlap policy, decided under the schedule's row lock. */
export interface ManualOccurrencePlan {
  /** `claimed` runs it now, `buffered` waits for the active occurrence to end, `skipped` runs nothing. */
  status: 'claimed' | 'buffered' | 'skipped';
  /** Turn the schedule's stored `buffered` rows into `skipped` (buffer_one keeps only the newest). */
  skipBuffered?: boolean;
  /** Turn the schedule's stored `claimed` scheduler rows into `skipped` (cancel_other replaces them). */
  skipClaimed?: boolean;
  /** Pipelines to cancel, with their unfinished tasks, in the same transaction (cancel_other). */
  cancelPipelineIds?: readonly string[];
}

/** Input of {@link CronStore.insertManualOccurrence}. */
export interface ManualOccurrenceRequest {
  /** The manual row to write (`claimed`); its status becomes the plan's. */
  row: NewCronExecution;
  /**
   * Called synchronously, inside the transaction, with the schedule locked and the same facts a
   * tick's plan reads (`activePipelineIds` whenever an occurrence is active).
   */
  plan: (schedule: ScheduleRow, state: DueScheduleState) => ManualOccurrencePlan;
}

/** What {@link CronStore.insertManualOccurrence} wrote. */
export interface ManualOccurrenceResult {
  /** The manual row as stored, with the plan's status. */
  row: CronExecutionRow;
  /** The facts the plan was given. */
  state: DueScheduleState;
}

/** The note of a schedule that disabled itself on reaching maxRuns. */
export const MAX_RUNS_NOTE = 'maxRuns reached';

/** Input of {@link CronStore.releaseBuffered}. */
export interface ReleaseBufferedRequest {
  now: Date;
  /** Only schedules of these workflows. */
  workflowNames: readonly string[];
  runnerId: string;
  limit: number;
}

/** Input of {@link CronStore.claimLostOccurrences}. */
export interface ClaimLostRequest {
  now: Date;
  /** Rows whose `fireAt` and `claimedAt` are both before this are lost. */
  lostBefore: Date;
  workflowNames: readonly string[];
  limit: number;
  runnerId: string;
  leaseMs: number;
}

/** A lost row claimed for recovery, with the live state of its schedule. */
export interface LostOccurrence {
  /** The row after the claim: `recoveryAttempts` already counts this attempt. */
  row: CronExecutionRow;
  /** null when the schedule was deleted. */
  schedule: ScheduleRow | null;
}

/** How a recovery attempt ended, as committed by {@link CronStore.finishRecovery}. */
export type RecoveryOutcome =
  | { status: 'linked'; pipelineExecutionId: string }
  | { status: 'abandoned'; reason: string }
  | { status: 'retry'; nextRecoveryAt: Date; refundAttempt: boolean };

/** Ledger counts behind `getCronExecutionStats`. */
export interface OccurrenceStats {
  total: number;
  handedOff: number;
  lost: number;
  skipped: number;
  missed: number;
  abandoned: number;
  meanDelayMs: number | null;
  p99DelayMs: number | null;
}

/** Recovery counts behind `getRecoveryStats`. */
export interface RecoveryCounts {
  totalRecoveryAttempts: number;
  successfulRecoveries: number;
  abandonedRecoveries: number;
}

/** Filter of {@link CronStore.listSchedules}, oldest first. */
export interface ScheduleFilter {
  enabledOnly?: boolean;
  workflowName?: string;
  limit: number;
  offset: number;
}

/** Storage port for cron schedules and their ledger. Every method is one transaction. */
export interface CronStore {
  /** Inserts a schedule, or returns the one that already has its name (`created: false`). */
  insertSchedule(schedule: ScheduleRow): Promise<{ schedule: ScheduleRow; created: boolean }>;
  getSchedule(id: string): Promise<ScheduleRow | null>;
  getScheduleByName(name: string): Promise<ScheduleRow | null>;
  listSchedules(filter: ScheduleFilter): Promise<ScheduleRow[]>;
  /**
   * Writes `patch` if the row still has `expectedVersion` (then version + 1); null when
   * another writer got there first.
   * @throws ScheduleConflictError when a new name is taken.
   */
  updateSchedule(
    id: string,
    expectedVersion: number,
    patch: Partial<Omit<ScheduleRow, 'id' | 'version' | 'createdAt'>>,
  ): Promise<ScheduleRow | null>;
  /**
   * Deletes a schedule; its ledger stays. In the same transaction its `buffered` rows become
   * `skipped`: nothing would ever release them, and they would count as waiting forever.
   * False when unknown.
   */
  deleteSchedule(id: string): Promise<boolean>;
  /**
   * A declarative sync's writes, in one transaction, all or nothing: inserts `inserts` (a
   * name already taken loses), writes each update by compare-and-set on `expectedVersion`
   * (then version + 1, as updateSchedule), and deletes each of `deletes` only at its
   * `expectedVersion` (ledger kept, buffered rows `skipped`, as deleteSchedule). False, with
   * nothing written, when any of them lost to a concurrent write: the caller re-reads and
   * plans again.
   */
  applyScheduleSync(writes: ScheduleSyncWrites): Promise<boolean>;
  /**
   * A tick's probe, one autocommit read (most ticks find nothing to do, and run nothing else):
   * the earliest enabled `nextRunAt` of the workflows up to `until`, and whether any occurrence
   * waits buffered. The tick runs {@link claimDueSchedules} only when that `nextRunAt` has come
   * and {@link releaseBuffered} only when a row waits.
   */
  probeTick(request: TickProbeRequest): Promise<TickProbe>;
  /**
   * Claim + phase 1 in one transaction: locks due enabled schedules (nextRunAt ≤ now; SKIP
   * LOCKED on Postgres), asks `plan` for each, inserts its rows ON CONFLICT DO NOTHING and
   * advances the schedule by compare-and-set on `version`. Returns the inserted rows to
   * hand off: `claimed`, or already `handed_off` (with `pipelineExecutionId`) when
   * `prepareHandoff` created their pipelines in the transaction; and the earlier rows a plan's
   * `skipClaimed` turned `skipped`, to report. A plan's `cancelPipelineIds` are cancelled in the
   * same transaction.
   */
  claimDueSchedules(request: ClaimDueRequest): Promise<CronExecutionRow[]>;
  /**
   * Hands on buffered occurrences, one transaction: for up to `limit` schedules (of
   * `workflowNames`; SKIP LOCKED on Postgres) that hold a `buffered` row and no other active
   * occurrence (`claimed`, or linked to a pending, running or paused pipeline), the oldest
   * buffered row becomes `claimed` by `runnerId` at `now` (fireAt = now; recovery treats it
   * like any claimed row from then on) and the schedule's runCount grows by one (not for a
   * `manual` row: maxRuns counts the scheduler's occurrences); a schedule
   * that is disabled (paused) or whose maxRuns is already reached has its buffered rows
   * `skipped` instead, and a schedule that reaches maxRuns is disabled with the note "maxRuns
   * reached". Returns the rows to hand off.
   */
  releaseBuffered(request: ReleaseBufferedRequest): Promise<CronExecutionRow[]>;
  /**
   * Inserts rows ON CONFLICT DO NOTHING (manual triggers, backfill). For a backfill row
   * whose slot already holds a `missed` or `abandoned` row without a pipeline, that row is
   * reclaimed as `claimed`/`backfill`. Returns the rows to hand off, and how many slots
   * already had an occurrence.
   */
  insertOccurrences(rows: readonly NewCronExecution[]): Promise<{ claimed: CronExecutionRow[]; existing: number }>;
  /**
   * A manual trigger, one transaction, like phase 1 of a tick: locks the schedule's row (waiting
   * for a tick that holds it), reads whether an earlier occurrence is active, asks `plan`, applies
   * it (skip buffered or claimed rows, cancel pipelines) and inserts the manual row with the
   * plan's status; so concurrent triggers and ticks take turns and never both start. Null, with
   * nothing written, when the schedule does not exist.
   */
  insertManualOccurrence(request: ManualOccurrenceRequest): Promise<ManualOccurrenceResult | null>;
  /** Phase 2: `claimed` → `handed_off` with the pipeline id. False when not `claimed` any more. */
  linkOccurrence(id: string, pipelineExecutionId: string, now: Date): Promise<boolean>;
  /**
   * Claims lost rows for recovery by compare-and-set: `claimed`, `fireAt` and `claimedAt` before
   * `lostBefore`, `nextRecoveryAt` passed, no live recovery lease. Increments
   * `recoveryAttempts` and leases each row to `runnerId`.
   */
  claimLostOccurrences(request: ClaimLostRequest): Promise<LostOccurrence[]>;
  /** Commits a recovery attempt, fenced on the recovery lease. False when fenced out. */
  finishRecovery(id: string, runnerId: string, outcome: RecoveryOutcome, now: Date): Promise<boolean>;
  getOccurrence(id: string): Promise<CronExecutionRow | null>;
  /** A schedule's ledger, newest scheduled time first. */
  listOccurrences(scheduleId: string, limit: number, offset: number): Promise<CronExecutionRow[]>;
  /** Ledger counts for rows scheduled at or after `since`; lost = claimed with fireAt and claimedAt < lostBefore. */
  occurrenceStats(since: Date, lostBefore: Date): Promise<OccurrenceStats>;
  recoveryCounts(): Promise<RecoveryCounts>;
  /** Rows still `claimed` whose fire time and claim are before `lostBefore`: lost, waiting for recovery. */
  countLostOccurrences(lostBefore: Date): Promise<number>;
  /** Ledger rows `abandoned` (retention bounds how many are kept). */
  countAbandonedOccurrences(): Promise<number>;
  /**
   * Enabled schedules due before `dueBefore` whose workflow is not among `runnable` (the
   * workflows of live runners): nothing will ever claim them. Earliest due first, at most `limit`.
   */
  listStrandedSchedules(dueBefore: Date, runnable: readonly string[], limit: number): Promise<ScheduleRow[]>;
  /**
   * Deletes up to `batchSize` terminal ledger rows (not `claimed`) that became terminal before
   * `before` (handed off, or else claimed, before it), except a `handed_off` row whose pipeline
   * is still pending, running or paused (the overlap check needs it).
   */
  deleteTerminalOccurrences(before: Date, batchSize: number): Promise<number>;
  /**
   * The id of the pipeline created under this occurrence id as idempotency key, when it is in
   * this database (the runner's own executor); null when there is none here.
   */
  findOccurrencePipeline(occurrenceId: string): Promise<string | null>;
}
