import { BackgroundLoop, type Clock, type Logger, type Storage } from '@orreryjs/core';

/** How often terminal rows are swept. */
export const RETENTION_INTERVAL_MS = 3_600_000;
/** Rows deleted per statement, so that a large sweep never holds a long lock. */
export const RETENTION_BATCH_SIZE = 1000;

/** Settings of {@link RetentionLoop}. */
export interface RetentionOptions {
  storage: Storage;
  executionsMs: number;
  cronLedgerMs: number;
  clock: Clock;
  logger: Logger;
}

/**
 * Deletes, every hour and in batches: terminal pipelines (with their tasks) completed longer
 * than `executionsMs` ago, except those whose cron ledger row is still `claimed` (recovery
 * links them by key); cron ledger rows that became terminal longer than `cronLedgerMs` ago,
 * except those whose pipeline is unfinished (the overlap check reads them); and rows of
 * runners silent (stopped or dead) for longer than `executionsMs`, so that `runners` does not
 * grow by a row per process start forever; and rate-limit starts that no window counts any
 * more (a bucket no attempt counts in again keeps its last starts otherwise). An age of
 * `Infinity` keeps rows forever.
 */
export class RetentionLoop extends BackgroundLoop {
  readonly #options: RetentionOptions;

  constructor(options: RetentionOptions) {
    super({ name: 'retention', intervalMs: RETENTION_INTERVAL_MS, logger: options.logger });
    this.#options = options;
  }

  /** One sweep; returns how many rows of each kind were deleted. */
  async sweep(signal?: AbortSignal): Promise<{ executions: number; cronLedger: number; runners: number }> {
    const { storage, executionsMs, cronLedgerMs, clock } = this.#options;
    const nowMs = clock.now().getTime();
    const executions = await deleteInBatches(executionsMs, nowMs, signal, (before) =>
      storage.executions.deleteTerminalPipelines(before, RETENTION_BATCH_SIZE),
    );
    const cronLedger = await deleteInBatches(cronLedgerMs, nowMs, signal, (before) =>
      storage.cron.deleteTerminalOccurrences(before, RETENTION_BATCH_SIZE),
    );
    const runners = await deleteInBatches(executionsMs, nowMs, signal, (before) =>
      storage.runners.deleteSilentRunners(before, RETENTION_BATCH_SIZE),
    );
    // Expired now, whatever the retention ages: no window counts them any more.
    await deleteInBatches(0, nowMs, signal, (before) =>
      storage.executions.deleteExpiredRateLimitStarts(before, RETENTION_BATCH_SIZE),
    );
    if (executions + cronLedger + runners > 0) {
      this.#options.logger.info({ executions, cronLedger, runners }, 'retention sweep deleted old rows');
    }
    return { executions, cronLedger, runners };
  }

  protected async tick(signal: AbortSignal): Promise<void> {
    await this.sweep(signal);
  }
}

async function deleteInBatches(
  ageMs: number,
  nowMs: number,
  signal: AbortSignal | undefined,
  deleteBatch: (before: Date) => Promise<number>,
): Promise<number> {
  if (!Number.isFinite(ageMs)) return 0;
  const before = new Date(nowMs - ageMs);
  let total = 0;
  while (!signal?.aborted) {
    const deleted = await deleteBatch(before);
    total += deleted;
    if (deleted < RETENTION_BATCH_SIZE) break;
  }
  return total;
}
