import { type FailingLoop, failingLoops, type PipelineExecution } from '@orreryjs/core';
import { backfillSchedule } from './backfill.js';
import { CronLoop } from './cron-loop.js';
import { Handoff } from './handoff.js';
import { cronHistory, cronRecoveryStats, cronStats, type HistoryOptions } from './ledger.js';
import { type CronServiceOptions, emitEvent } from './options.js';
import { CronRecovery, type RecoveryResult } from './recover.js';
import { CronScheduler, type TickResult } from './scheduler.js';
import { type AddScheduleOptions, type ListSchedulesFilter, ScheduleManager } from './schedules.js';
import type { SyncSchedulesOptions, SyncSchedulesResult } from './sync.js';
import { triggerSchedule } from './trigger.js';
import type { CronExecution, CronExecutionStats, CronSchedule, CronScheduleInput, RecoveryStats } from './types.js';
import type { TriggerOptions } from './validate.js';

/** What {@link CronService.health} reports. */
export interface CronHealth {
  schedulerRunning: boolean;
  recoveryRunning: boolean;
  /** When the last tick claimed (null before the first). */
  lastTickAt: Date | null;
  /** When the last recovery pass claimed (null before the first). */
  lastRecoveryAt: Date | null;
}

/**
 * Orrery's guaranteed cron: schedule management, the two-phase-commit scheduler tick,
 * recovery of lost occurrences, manual triggers, backfills and ledger statistics, over any
 * {@link PipelineExecutor} and {@link CronStore}. `DefaultRunner` builds one and delegates its
 * cron methods to it. Schedule management works before `start()` and without the loops.
 */
export class CronService {
  readonly #options: CronServiceOptions;
  readonly #schedules: ScheduleManager;
  readonly #handoff: Handoff;
  readonly #scheduler: CronScheduler;
  readonly #recovery: CronRecovery;
  readonly #schedulerLoop: CronLoop;
  readonly #recoveryLoop: CronLoop;

  constructor(options: CronServiceOptions) {
    this.#options = options;
    this.#handoff = new Handoff(options);
    this.#scheduler = new CronScheduler(options, this.#handoff);
    this.#recovery = new CronRecovery(options);
    const { logger, settings } = options;
    this.#schedulerLoop = new CronLoop({ name: 'cron-scheduler', intervalMs: settings.pollIntervalMs, logger }, () =>
      this.#scheduler.tick().then(() => this.#scheduler.msUntilNextWork()),
    );
    this.#recoveryLoop = new CronLoop(
      { name: 'cron-recovery', intervalMs: settings.recoveryIntervalMs, logger },
      (signal) => this.#recovery.recover(signal).then(() => (this.#recovery.hasMoreLost ? 0 : null)),
    );
    // A schedule this process (re)times wakes the tick at its next slot rather than a poll later.
    this.#schedules = new ScheduleManager(options, (nextRunAt) => {
      this.#scheduler.expectWorkAt(nextRunAt);
      const delayMs = this.#scheduler.msUntilNextWork();
      if (delayMs !== null) this.#schedulerLoop.wakeIn(delayMs);
    });
  }

  /**
   * Adds a schedule; re-adding the same name and definition returns the existing one.
   * @throws ValidationError (InvalidCronExpressionError, InvalidTimezoneError, ContextError) naming the field.
   * @throws WorkflowNotFoundError when the workflow is not registered.
   * @throws ScheduleConflictError when the name holds another definition and onConflict is not 'update'.
   */
  addSchedule(input: CronScheduleInput, options?: AddScheduleOptions): Promise<CronSchedule> {
    return this.#schedules.add(input, options);
  }

  /**
   * Makes the stored schedules match a declared list, in one transaction (see ScheduleManager.sync).
   * @throws ValidationError (or a subclass) naming the bad entry, WorkflowNotFoundError.
   */
  syncSchedules(inputs: readonly CronScheduleInput[], options?: SyncSchedulesOptions): Promise<SyncSchedulesResult> {
    return this.#schedules.sync(inputs, options);
  }

  /** Schedules, oldest first. */
  listSchedules(filter?: ListSchedulesFilter): Promise<CronSchedule[]> {
    return this.#schedules.list(filter);
  }

  /** @throws ScheduleNotFoundError for an unknown id or name. */
  getSchedule(idOrName: string): Promise<CronSchedule> {
    return this.#schedules.get(idOrName);
  }

  /**
   * Changes some fields of a schedule, validated whole.
   * @throws ScheduleNotFoundError, ScheduleConflictError (name taken), ValidationError, WorkflowNotFoundError.
   */
  updateSchedule(idOrName: string, patch: Partial<CronScheduleInput>): Promise<CronSchedule> {
    return this.#schedules.update(idOrName, patch);
  }

  /** Enables (from the next slot after now) or disables a schedule. @throws ScheduleNotFoundError */
  setEnabled(idOrName: string, enabled: boolean, options?: { note?: string }): Promise<CronSchedule> {
    return this.#schedules.setEnabled(idOrName, enabled, options);
  }

  /**
   * Called when a pipeline a schedule started ended `failed`: a `pauseOnFailure` schedule is
   * disabled with the note "paused after failure of execution <id>" and `cron:paused` is
   * emitted. Does nothing for other schedules. Never throws: a failure is logged. This makes
   * the pause immediate; should it never run (the runner died), the scheduler's claim of the
   * schedule's next slot pauses it instead.
   */
  async pipelineFailed(scheduleId: string, executionId: string): Promise<void> {
    try {
      const paused = await this.#schedules.pauseAfterFailure(scheduleId, executionId);
      if (paused === null) return;
      emitEvent(this.#options, 'cron:paused', {
        scheduleId: paused.id,
        scheduleName: paused.name,
        note: paused.note ?? '',
        reason: 'failure',
        pipelineExecutionId: executionId,
      });
    } catch (error) {
      this.#options.logger.error({ err: error, scheduleId, executionId }, 'pausing a schedule after a failure failed');
    }
  }

  /** Deletes a schedule, keeping its ledger. @throws ScheduleNotFoundError */
  deleteSchedule(idOrName: string): Promise<void> {
    return this.#schedules.delete(idOrName);
  }

  /**
   * Fires a schedule now (enabled or not), audited as a `manual` ledger row, under the
   * schedule's overlap policy unless `options.overlapPolicy` is `'allow'`.
   * @throws ValidationError for bad options.
   * @throws ScheduleOverlapError when a `skip` schedule has an active occurrence (the row is `skipped`).
   * @throws ScheduleNotFoundError, WorkflowNotFoundError, or the executor's error.
   */
  trigger(idOrName: string, options?: TriggerOptions): Promise<PipelineExecution> {
    return triggerSchedule(this.#options, this.#schedules, this.#handoff, idOrName, options);
  }

  /**
   * Runs the past slots of [start, end) that have not run; a second call creates nothing.
   * @throws ValidationError (end in the future, over 10,000 slots), ScheduleNotFoundError, WorkflowNotFoundError.
   */
  backfill(idOrName: string, range: { start: Date; end: Date }): Promise<{ created: number; existing: number }> {
    return backfillSchedule(this.#options, this.#schedules, this.#handoff, idOrName, range);
  }

  /** A schedule's ledger, newest first. @throws ScheduleNotFoundError */
  history(idOrName: string, options?: HistoryOptions): Promise<CronExecution[]> {
    return cronHistory(this.#options, this.#schedules, idOrName, options);
  }

  /** Ledger counts since `since` (default 24 hours ago). */
  stats(options?: { since?: Date }): Promise<CronExecutionStats> {
    return cronStats(this.#options, options);
  }

  /** What recovery has done. */
  recoveryStats(): Promise<RecoveryStats> {
    return cronRecoveryStats(this.#options);
  }

  /** Runs one scheduler tick now (tests with a ManualClock drive it). */
  tick(): Promise<TickResult> {
    return this.#scheduler.tick();
  }

  /** Runs one recovery pass now; once `signal` aborts, the rest of the pass is released untried. */
  recover(signal?: AbortSignal): Promise<RecoveryResult> {
    return this.#recovery.recover(signal);
  }

  /**
   * Another process added, enabled or re-timed a schedule (a cross-process notification): tick
   * at `nextRunAt` (at once when it is due or unknown) rather than at the next poll. A no-op
   * for a tick loop that is not running.
   */
  wake(nextRunAt?: Date): void {
    if (nextRunAt === undefined) {
      this.#schedulerLoop.nudge();
      return;
    }
    this.#scheduler.expectWorkAt(nextRunAt);
    const delayMs = this.#scheduler.msUntilNextWork();
    if (delayMs !== null) this.#schedulerLoop.wakeIn(delayMs);
  }

  /** Starts the tick loop (if enableScheduling) and the recovery loop (if enableRecovery); idempotent. */
  start(): void {
    if (this.#options.settings.enableScheduling) this.#schedulerLoop.start();
    if (this.#options.settings.enableRecovery) this.#recoveryLoop.start();
  }

  /**
   * Stops both loops and waits for the tick, pass and handoffs in flight; idempotent.
   * Jittered occurrences still waiting stay `claimed`, so recovery hands them off.
   */
  async stop(): Promise<void> {
    await Promise.all([this.#schedulerLoop.stop(), this.#recoveryLoop.stop()]);
    await this.#handoff.drain();
    const released = this.#scheduler.releaseDeferred();
    if (released > 0) {
      this.#options.logger.info({ occurrences: released }, 'cron stopped with jittered occurrences left to recovery');
    }
  }

  /** The cron loops (tick, recovery) whose last tick failed: they back off, late with their work. */
  failingLoops(): FailingLoop[] {
    return failingLoops([this.#schedulerLoop, this.#recoveryLoop]);
  }

  /** Whether the loops run, and when they last did work. */
  health(): CronHealth {
    return {
      schedulerRunning: this.#schedulerLoop.running,
      recoveryRunning: this.#recoveryLoop.running,
      lastTickAt: this.#scheduler.lastTickAt,
      lastRecoveryAt: this.#recovery.lastRecoveryAt,
    };
  }
}
