import {
  type CronExecutionRow,
  isOrreryError,
  type LostOccurrence,
  type PipelineExecution,
  type RecoveryOutcome,
  type ScheduleRow,
  ValidationError,
} from '@orreryjs/core';
import { forEachConcurrently } from './concurrency.js';
import { HANDOFF_CONCURRENCY } from './handoff.js';
import { cancelIfReplaced } from './link.js';
import type { CronServiceOptions } from './options.js';
import { emitEvent } from './options.js';
import { recoveryContext } from './schedule-context.js';

/** Counts of one recovery pass. */
export interface RecoveryResult {
  /** Lost occurrences linked to a pipeline (an existing one, or one started now). */
  recovered: number;
  /** Lost occurrences given up on (`abandoned` rows, each with a `cron:abandoned` event). */
  abandoned: number;
  /** Attempts that failed and were rescheduled with back-off. */
  retried: number;
  /** Occurrences given back untried, their attempt refunded, because the executor or this pass was shutting down. */
  released: number;
}

type RecoveryDeps = Pick<
  CronServiceOptions,
  'store' | 'executor' | 'clock' | 'logger' | 'runnerId' | 'settings' | 'workflows' | 'emit' | 'faults'
>;

type Outcome = keyof RecoveryResult | 'fenced';

/** One pass's shared state: set once a handoff is refused for shutdown, so the rest are released untried. */
interface Pass {
  signal: AbortSignal | undefined;
  stopping: boolean;
}

/**
 * Step 4 of the cron cycle: finds occurrences still `claimed` `lostThresholdMs` after their
 * fire time (their runner died or failed between phase 1 and phase 2) and hands them off
 * again under the same idempotency key, so a pipeline that already exists is linked, never
 * duplicated. The claim is a compare-and-set that counts the attempt and leases the row in
 * the database, so two instances never recover one row and a restart does not reset the
 * count. Gives up (`abandoned`, `cron:abandoned`) past `maxRecoveryAttempts`, past
 * `maxRecoveryAgeMs` since the handoff was due (the later of claim and fire time), or when
 * the schedule was deleted, or disabled (for scheduler occurrences; manual and backfill ones
 * were explicit requests and still run) — but links first: a pipeline that already exists
 * under the row's key is its run, whatever else. A shutdown never counts against an
 * occurrence: a handoff refused because the executor is closing (`ConfigurationError`), or a
 * pass stopped by its signal, refunds the attempt and releases the row for the next runner.
 */
export class CronRecovery {
  readonly #deps: RecoveryDeps;
  #lastRecoveryAt: Date | null = null;
  #moreLost = false;

  constructor(deps: RecoveryDeps) {
    this.#deps = deps;
  }

  /** When the last pass claimed. */
  get lastRecoveryAt(): Date | null {
    return this.#lastRecoveryAt;
  }

  /** True when the last pass filled its batch: run again at once. */
  get hasMoreLost(): boolean {
    return this.#moreLost;
  }

  /**
   * Runs one recovery pass over up to `batchSize` lost occurrences. Once `signal` aborts (the
   * loop stops), occurrences not yet handed off are released with their attempt refunded.
   */
  async recover(signal?: AbortSignal): Promise<RecoveryResult> {
    const { store, clock, settings, workflows, runnerId } = this.#deps;
    const now = clock.now();
    const lost = await store.claimLostOccurrences({
      now,
      lostBefore: new Date(now.getTime() - settings.lostThresholdMs),
      workflowNames: workflows.names(),
      limit: settings.batchSize,
      runnerId,
      leaseMs: settings.lostThresholdMs,
    });
    this.#lastRecoveryAt = now;
    const pass: Pass = { signal, stopping: false };
    const result: RecoveryResult = { recovered: 0, abandoned: 0, retried: 0, released: 0 };
    await forEachConcurrently(lost, HANDOFF_CONCURRENCY, async (occurrence) => {
      const outcome = isStopping(pass) ? await this.#release(occurrence.row) : await this.#recoverOne(occurrence, pass);
      if (outcome !== 'fenced') result[outcome] += 1;
    });
    this.#moreLost = lost.length >= settings.batchSize && !isStopping(pass);
    return result;
  }

  async #recoverOne({ row, schedule }: LostOccurrence, pass: Pass): Promise<Outcome> {
    const { executor, clock, logger, faults } = this.#deps;
    const attempt = row.recoveryAttempts;
    const reason = this.#abandonReason(row, schedule, clock.now());
    if (reason !== null) return this.#linkOrAbandon(row, reason);
    emitEvent(this.#deps, 'cron:lost', {
      scheduleId: row.scheduleId,
      occurrenceId: row.id,
      scheduledTime: row.scheduledTime,
      recoveryAttempt: attempt,
    });
    let execution: PipelineExecution;
    try {
      execution = await executor.executeAsync(row.workflowName, recoveryContext(row.context, attempt), {
        idempotencyKey: row.id,
        scheduledTime: row.scheduledTime,
        scheduleId: row.scheduleId,
      });
    } catch (error) {
      if (pass.signal?.aborted === true || isOrreryError(error, 'CONFIGURATION')) {
        // The executor is shutting down (or this pass is): not the occurrence's fault, and nothing more will start.
        pass.stopping = true;
        logger.info(
          { err: error, occurrenceId: row.id },
          'cron recovery stopped by shutdown; the occurrence is released',
        );
        return this.#release(row);
      }
      logger.warn({ err: error, scheduleId: row.scheduleId, occurrenceId: row.id, attempt }, 'cron recovery failed');
      if (error instanceof ValidationError || isOrreryError(error, 'IDEMPOTENCY_CONFLICT')) {
        return this.#abandon(row, `handoff can never succeed: ${describeError(error)}`);
      }
      return this.#retry(row, error);
    }
    await faults?.duringRecovery?.(row);
    return this.#link(row, execution.id);
  }

  /**
   * Links the pipeline that already exists under the row's key (the occurrence ran: the
   * ledger must not say abandoned, and the overlap check must see it), else abandons.
   */
  async #linkOrAbandon(row: CronExecutionRow, reason: string): Promise<Outcome> {
    let existing: string | null;
    try {
      existing = await this.#deps.store.findOccurrencePipeline(row.id);
    } catch (error) {
      this.#deps.logger.warn({ err: error, occurrenceId: row.id }, 'cron recovery could not look up the pipeline');
      return this.#retry(row, error);
    }
    return existing === null ? this.#abandon(row, reason) : this.#link(row, existing);
  }

  async #link(row: CronExecutionRow, pipelineExecutionId: string): Promise<Outcome> {
    if (!(await this.#finish(row, { status: 'linked', pipelineExecutionId }))) {
      await cancelIfReplaced(this.#deps, row, pipelineExecutionId);
      return 'fenced';
    }
    emitEvent(this.#deps, 'cron:recovered', {
      scheduleId: row.scheduleId,
      occurrenceId: row.id,
      scheduledTime: row.scheduledTime,
      pipelineExecutionId,
      recoveryAttempt: row.recoveryAttempts,
    });
    return 'recovered';
  }

  /** Gives the row back untried: the attempt is refunded and any runner may take it at once. */
  async #release(row: CronExecutionRow): Promise<Outcome> {
    const outcome: RecoveryOutcome = { status: 'retry', nextRecoveryAt: this.#deps.clock.now(), refundAttempt: true };
    return (await this.#finish(row, outcome)) ? 'released' : 'fenced';
  }

  #abandonReason(row: CronExecutionRow, schedule: ScheduleRow | null, now: Date): string | null {
    const { maxRecoveryAttempts, maxRecoveryAgeMs } = this.#deps.settings;
    if (schedule === null) return 'schedule was deleted';
    const fromScheduler = row.source === 'schedule' || row.source === 'catchup';
    if (fromScheduler && !schedule.enabled) return 'schedule was disabled';
    if (row.recoveryAttempts > maxRecoveryAttempts) {
      return `gave up after ${maxRecoveryAttempts} recovery attempts (maxRecoveryAttempts)`;
    }
    // Age counts from when the handoff was due: a jittered row (fireAt after its claim) left by a graceful
    // restart gets the whole window after its fire time, and a row claimed late gets it after its claim.
    const dueAtMs = Math.max(row.fireAt.getTime(), row.claimedAt.getTime());
    const ageMs = now.getTime() - dueAtMs;
    if (ageMs > maxRecoveryAgeMs) {
      return `due for handoff ${ageMs} ms ago, older than maxRecoveryAgeMs (${maxRecoveryAgeMs})`;
    }
    return null;
  }

  async #abandon(row: CronExecutionRow, reason: string): Promise<Outcome> {
    if (!(await this.#finish(row, { status: 'abandoned', reason }))) return 'fenced';
    this.#deps.logger.warn({ scheduleId: row.scheduleId, occurrenceId: row.id, reason }, 'cron occurrence abandoned');
    emitEvent(this.#deps, 'cron:abandoned', {
      scheduleId: row.scheduleId,
      occurrenceId: row.id,
      scheduledTime: row.scheduledTime,
      reason,
    });
    return 'abandoned';
  }

  async #retry(row: CronExecutionRow, error: unknown): Promise<Outcome> {
    const now = this.#deps.clock.now();
    // Attempt n+1 waits lostThresholdMs · 2ⁿ; an outage of the database is not the occurrence's fault.
    const waitMs = this.#deps.settings.lostThresholdMs * 2 ** row.recoveryAttempts;
    const outcome: RecoveryOutcome = {
      status: 'retry',
      nextRecoveryAt: new Date(now.getTime() + waitMs),
      refundAttempt: isOrreryError(error, 'DATABASE'),
    };
    return (await this.#finish(row, outcome)) ? 'retried' : 'fenced';
  }

  /** Commits the attempt, fenced on this runner's recovery lease; false (logged) when fenced out or failed. */
  async #finish(row: CronExecutionRow, outcome: RecoveryOutcome): Promise<boolean> {
    const { store, clock, logger, runnerId } = this.#deps;
    try {
      if (await store.finishRecovery(row.id, runnerId, outcome, clock.now())) return true;
      logger.info(
        { occurrenceId: row.id, outcome: outcome.status },
        'cron recovery lease lost; another runner owns it',
      );
    } catch (error) {
      // The lease expires and a later pass retries; the pipeline, if started, is found by its key.
      logger.warn({ err: error, occurrenceId: row.id, outcome: outcome.status }, 'cron recovery could not be recorded');
    }
    return false;
  }
}

function isStopping(pass: Pass): boolean {
  return pass.stopping || pass.signal?.aborted === true;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
