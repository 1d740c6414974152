import type { CronExecutionRow, NewCronExecution } from '@orreryjs/core';
import { DeferredHandoffs } from './deferred.js';
import type { CronPausedEvent } from './events.js';
import type { Handoff } from './handoff.js';
import { reportBuffered, reportCancelled, reportFired, reportSkipped } from './link.js';
import type { CronServiceOptions } from './options.js';
import { emitEvent } from './options.js';
import { failedPipelineId, planSchedule, type TickBudget } from './plan.js';
import { scheduleNameOf } from './schedule-context.js';

/** Cron slots one tick may examine across all its schedules (about 0.25 s of evaluation). */
export const TICK_SLOT_BUDGET = 250_000;

/** Counts of one scheduler tick. */
export interface TickResult {
  /** Occurrences phase 1 claimed to run in this tick. */
  claimed: number;
  /** Occurrences handed off and linked in this tick (including earlier jittered ones now due). */
  handedOff: number;
}

type SchedulerDeps = Pick<
  CronServiceOptions,
  | 'store'
  | 'clock'
  | 'logger'
  | 'runnerId'
  | 'settings'
  | 'workflows'
  | 'emit'
  | 'faults'
  | 'inTransactionHandoff'
  | 'executor'
>;

/**
 * The cron tick: claim + phase 1 in one transaction (planSchedule decides each due
 * schedule's occurrences under its row lock), then handoff and phase 2 for each claimed
 * occurrence whose fire time has come. Jittered occurrences wait in memory
 * ({@link DeferredHandoffs}) and are handed off by the first tick at or after their fire time.
 * The scheduler never waits for pipelines.
 */
export class CronScheduler {
  readonly #deps: SchedulerDeps;
  readonly #handoff: Handoff;
  readonly #deferred = new DeferredHandoffs();
  #lastTickAt: Date | null = null;
  #moreDue = false;
  /** Earliest instant known to have work (a schedule's nextRunAt, a jittered fireAt); null when none is known. */
  #nextWorkAtMs: number | null = null;

  constructor(deps: SchedulerDeps, handoff: Handoff) {
    this.#deps = deps;
    this.#handoff = handoff;
  }

  /** When the last tick's claim committed. */
  get lastTickAt(): Date | null {
    return this.#lastTickAt;
  }

  /**
   * Milliseconds until the earliest work this scheduler knows of: 0 when the last tick left
   * due work behind (batch or budget full), null when it knows of none. A schedule another
   * process wrote is known once a tick's probe has looked that far ahead (up to its next regular tick).
   */
  msUntilNextWork(): number | null {
    if (this.#moreDue) return 0;
    if (this.#nextWorkAtMs === null) return null;
    return Math.max(0, this.#nextWorkAtMs - this.#deps.clock.now().getTime());
  }

  /** Notes that work may be due at `at`: a schedule's new nextRunAt, or a jittered fire time. */
  expectWorkAt(at: Date | null): void {
    if (at === null) return;
    const atMs = at.getTime();
    if (this.#nextWorkAtMs === null || atMs < this.#nextWorkAtMs) this.#nextWorkAtMs = atMs;
  }

  /** Runs one tick. Handoff failures are logged, not thrown; a database error in the claim is. */
  async tick(): Promise<TickResult> {
    const { store, clock, settings, workflows, runnerId, logger, faults, inTransactionHandoff } = this.#deps;
    const now = clock.now();
    if (this.#nextWorkAtMs !== null && this.#nextWorkAtMs <= now.getTime()) this.#nextWorkAtMs = null;
    const budget: TickBudget = { rows: settings.maxOccurrencesPerTick, slots: TICK_SLOT_BUDGET };
    const planContext = { now, runnerId, settings, logger };
    const skipped = new Map<string, NewCronExecution>();
    const missed = new Map<string, NewCronExecution>();
    const buffered = new Map<string, NewCronExecution>();
    const toCancel = new Set<string>();
    const paused: CronPausedEvent[] = [];
    let planned = 0;
    let moreDue = false;
    // A claim takes what is due, up to the rows one claim may write anyway: a burst is claimed in a
    // few large transactions from its first tick on, each paying its statements and commit once.
    const limit = settings.maxOccurrencesPerTick;
    // One read says whether there is anything to claim or release; it looks up to the next regular
    // tick, so that the loop wakes on the next slot whichever process wrote its schedule.
    const probe = await store.probeTick({
      workflowNames: workflows.names(),
      until: new Date(now.getTime() + settings.pollIntervalMs),
    });
    const anyDue = probe.earliestRunAt !== null && probe.earliestRunAt.getTime() <= now.getTime();
    if (!anyDue) this.expectWorkAt(probe.earliestRunAt);
    // An idle tick claims nothing: no claim transaction, no plans.
    let rows: CronExecutionRow[] = [];
    if (anyDue) {
      rows = await store.claimDueSchedules({
        now,
        missedBefore: new Date(now.getTime() - settings.misfireThresholdMs),
        workflowNames: workflows.names(),
        limit,
        plan: (schedule, state) => {
          const plan = planSchedule(schedule, state, planContext, budget);
          if (plan === null) {
            moreDue = true;
            return null;
          }
          planned += 1;
          if (plan.nextRunAt !== null && plan.nextRunAt.getTime() <= now.getTime()) moreDue = true;
          else this.expectWorkAt(plan.nextRunAt);
          for (const row of plan.occurrences) {
            if (row.status === 'skipped') skipped.set(row.id, row);
            else if (row.status === 'missed') missed.set(row.id, row);
            else if (row.status === 'buffered') buffered.set(row.id, row);
          }
          const replaces =
            schedule.overlapPolicy === 'cancel_other' && plan.occurrences.some((r) => r.status === 'claimed');
          const cancelPipelineIds = replaces ? (state.activePipelineIds ?? []) : [];
          for (const id of cancelPipelineIds) toCancel.add(id);
          if (plan.disableNote != null) {
            const failed = failedPipelineId(schedule, state);
            paused.push({
              scheduleId: schedule.id,
              scheduleName: schedule.name,
              note: plan.disableNote,
              reason: failed === null ? 'max_runs' : 'failure',
              pipelineExecutionId: failed,
            });
          }
          // The claim cancels them in its own transaction: a crash after it commits cannot leave them running.
          return cancelPipelineIds.length === 0 ? plan : { ...plan, cancelPipelineIds };
        },
        ...(inTransactionHandoff && {
          prepareHandoff: (occurrence: CronExecutionRow) => inTransactionHandoff.preparePipeline(occurrence, now),
        }),
      });
    }
    this.#lastTickAt = now;
    this.#moreDue = moreDue || planned >= limit;
    // Besides the rows to hand off, the claim returns the stored ones a cancel_other occurrence replaced (`skipped`).
    for (const row of rows) if (row.status === 'skipped') skipped.set(row.id, row);
    for (const row of skipped.values()) reportSkipped(this.#deps, row);
    for (const row of missed.values()) this.#reportMissed(row);
    for (const row of buffered.values()) reportBuffered(this.#deps, row);
    for (const event of paused) emitEvent(this.#deps, 'cron:paused', event);
    if (toCancel.size > 0) await faults?.afterReplacedCommit?.([...toCancel]);
    await reportCancelled(this.#deps, toCancel);
    const linkedInClaim = this.#reportHandedOff(rows);
    // Buffered occurrences whose active one has ended: claimed now, so recovery covers them from here on.
    // Also when this claim buffered rows: the occurrence they wait for may have ended meanwhile.
    const released =
      probe.anyBuffered || buffered.size > 0
        ? await store.releaseBuffered({ now, workflowNames: workflows.names(), runnerId, limit: settings.batchSize })
        : [];
    const claimed = [...rows.filter((row) => row.status === 'claimed'), ...released];
    await faults?.afterPhase1?.(claimed);
    const due = await this.#stillToHandOff(this.#deferred.takeDue(now));
    const ready = this.#splitByFireTime(claimed, now, due);
    const handedOff = await this.#handoff.handOffAll(ready);
    return { claimed: claimed.length + linkedInClaim, handedOff: linkedInClaim + handedOff };
  }

  /**
   * The jittered occurrences, held in memory since their claim, that may still be handed off:
   * each is re-read first, so one that a newer `cancel_other` occurrence replaced (`skipped`)
   * or that recovery already linked never starts a pipeline. One whose schedule was deleted or
   * disabled since is dropped too, still `claimed`: recovery abandons it and the ledger says why.
   */
  async #stillToHandOff(rows: readonly CronExecutionRow[]): Promise<CronExecutionRow[]> {
    const { store, logger } = this.#deps;
    const kept: CronExecutionRow[] = [];
    for (const row of rows) {
      try {
        const current = await store.getOccurrence(row.id);
        if (current?.status !== 'claimed') continue;
        // Only scheduler occurrences are jittered, and recovery abandons those of a deleted or disabled schedule.
        if ((await store.getSchedule(row.scheduleId))?.enabled !== true) continue;
        kept.push(current);
      } catch (error) {
        // It stays claimed: recovery hands it off.
        logger.warn(
          { err: error, occurrenceId: row.id },
          'cron could not re-read a jittered occurrence; left to recovery',
        );
      }
    }
    return kept;
  }

  /** Reports the occurrences the claim transaction already handed off; returns how many. */
  #reportHandedOff(rows: readonly CronExecutionRow[]): number {
    const linked = rows.filter((row) => row.status === 'handed_off');
    if (linked.length === 0) return 0;
    this.#deps.inTransactionHandoff?.handedOff(linked);
    for (const row of linked) reportFired(this.#deps, row, row.pipelineExecutionId!, row.handedOffAt!);
    return linked.length;
  }

  /** Drops the jittered occurrences still waiting (they stay `claimed`, so recovery fires them). */
  releaseDeferred(): number {
    return this.#deferred.clear();
  }

  #splitByFireTime(rows: readonly CronExecutionRow[], now: Date, ready: CronExecutionRow[]): CronExecutionRow[] {
    const later: CronExecutionRow[] = [];
    for (const row of rows) (row.fireAt.getTime() <= now.getTime() ? ready : later).push(row);
    this.#deferred.add(later);
    this.expectWorkAt(this.#deferred.earliestFireAt());
    return ready;
  }

  #reportMissed(row: NewCronExecution): void {
    emitEvent(this.#deps, 'cron:missed', {
      scheduleId: row.scheduleId,
      scheduleName: scheduleNameOf(row),
      occurrenceId: row.id,
      scheduledTime: row.scheduledTime,
      missedCount: row.missedCount,
    });
  }
}
