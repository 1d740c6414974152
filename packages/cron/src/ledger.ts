import { checkPage, ScheduleNotFoundError, UniversalUuid } from '@orreryjs/core';
import type { CronServiceOptions } from './options.js';
import type { ScheduleManager } from './schedules.js';
import { type CronExecution, type CronExecutionStats, type RecoveryStats, toCronExecution } from './types.js';

/** Options of {@link cronHistory}. */
export interface HistoryOptions {
  /** @default 100 (HISTORY_DEFAULT_LIMIT) */
  limit?: number;
  /** @default 0 */
  offset?: number;
}

/** Ledger rows `getCronExecutionHistory` returns when no limit is given. */
const HISTORY_DEFAULT_LIMIT = 100;
const DAY_MS = 86_400_000;

type LedgerDeps = Pick<CronServiceOptions, 'store' | 'clock' | 'settings'>;

/**
 * A schedule's ledger, newest scheduled time first. The id of a deleted schedule still
 * reads its ledger (deletes keep history).
 * @throws ScheduleNotFoundError when no schedule or ledger row has that id or name.
 */
export async function cronHistory(
  deps: LedgerDeps,
  schedules: ScheduleManager,
  idOrName: string,
  options: HistoryOptions = {},
): Promise<CronExecution[]> {
  const { limit, offset } = checkPage(options, { defaultLimit: HISTORY_DEFAULT_LIMIT });
  let scheduleId: string;
  try {
    scheduleId = (await schedules.resolve(idOrName)).id;
  } catch (error) {
    if (!(error instanceof ScheduleNotFoundError) || !UniversalUuid.isUuid(idOrName)) throw error;
    const id = idOrName.toLowerCase();
    if ((await deps.store.listOccurrences(id, 1, 0)).length === 0) throw error;
    scheduleId = id;
  }
  const rows = await deps.store.listOccurrences(scheduleId, limit, offset);
  return rows.map(toCronExecution);
}

/** Ledger counts of occurrences scheduled since `since` (default: 24 hours ago). */
export async function cronStats(deps: LedgerDeps, options: { since?: Date } = {}): Promise<CronExecutionStats> {
  const now = deps.clock.now();
  const since = options.since ?? new Date(now.getTime() - DAY_MS);
  const lostBefore = new Date(now.getTime() - deps.settings.lostThresholdMs);
  const stats = await deps.store.occurrenceStats(since, lostBefore);
  const settled = stats.handedOff + stats.lost + stats.abandoned;
  return {
    totalExecutions: stats.total,
    successfulExecutions: stats.handedOff,
    lostExecutions: stats.lost,
    skippedExecutions: stats.skipped,
    missedExecutions: stats.missed,
    abandonedExecutions: stats.abandoned,
    successRate: percentage(stats.handedOff, settled),
    meanDelayMs: stats.meanDelayMs,
    p99DelayMs: stats.p99DelayMs,
  };
}

/** What recovery has done over the whole ledger. */
export async function cronRecoveryStats(deps: LedgerDeps): Promise<RecoveryStats> {
  const counts = await deps.store.recoveryCounts();
  const failed = Math.max(0, counts.totalRecoveryAttempts - counts.successfulRecoveries);
  return {
    totalRecoveryAttempts: counts.totalRecoveryAttempts,
    successfulRecoveries: counts.successfulRecoveries,
    failedRecoveries: failed,
    abandonedRecoveries: counts.abandonedRecoveries,
    recoverySuccessRate: percentage(counts.successfulRecoveries, counts.totalRecoveryAttempts),
  };
}

/** 100·part / whole; null when `whole` is 0: a rate with no attempts is unknown, not 0 %. */
function percentage(part: number, whole: number): number | null {
  return whole === 0 ? null : (100 * part) / whole;
}
