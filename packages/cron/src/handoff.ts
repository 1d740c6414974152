import type { CronExecutionRow, PipelineExecution } from '@orreryjs/core';
import { forEachConcurrently } from './concurrency.js';
import { linkOccurrence } from './link.js';
import type { CronServiceOptions } from './options.js';

/** Handoffs in flight at once in one batch: enough to overlap database round trips, few enough to stay polite. */
export const HANDOFF_CONCURRENCY = 16;

/** How one handoff ended. */
export interface HandoffResult {
  /** The pipeline, when `executeAsync` succeeded (even if phase 2 then failed). */
  execution: PipelineExecution | null;
  /** True when phase 2 linked the row (status `handed_off`). */
  linked: boolean;
  /** Why `executeAsync` failed; the row stays `claimed` for recovery. */
  error?: unknown;
}

type HandoffDeps = Pick<CronServiceOptions, 'executor' | 'store' | 'clock' | 'logger' | 'emit' | 'faults'>;

/**
 * Step 2 of the cron cycle: starts the pipeline of a claimed occurrence with
 * `executeAsync` (never `execute`, which would block the scheduler on the pipeline), keyed by
 * the occurrence id so that any repeat returns the same pipeline, then links it (phase 2).
 * A failed handoff is logged and leaves the row `claimed`, for recovery; it never throws,
 * except for a simulated crash from `faults.afterHandoff`.
 */
export class Handoff {
  readonly #deps: HandoffDeps;
  readonly #inFlight = new Set<Promise<unknown>>();

  constructor(deps: HandoffDeps) {
    this.#deps = deps;
  }

  /** Hands off every row, a few at a time; returns how many were linked. */
  async handOffAll(rows: readonly CronExecutionRow[]): Promise<number> {
    let linked = 0;
    await forEachConcurrently(rows, HANDOFF_CONCURRENCY, async (row) => {
      if ((await this.handOff(row)).linked) linked += 1;
    });
    return linked;
  }

  /** Hands off one claimed row and links it. */
  handOff(row: CronExecutionRow): Promise<HandoffResult> {
    const running = this.#handOff(row);
    this.#inFlight.add(running);
    const forget = () => this.#inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  /** Waits for every handoff in flight (at stop); their failures were already logged. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#inFlight]);
  }

  async #handOff(row: CronExecutionRow): Promise<HandoffResult> {
    const { executor, logger, faults } = this.#deps;
    let execution: PipelineExecution;
    try {
      execution = await executor.executeAsync(row.workflowName, row.context, {
        idempotencyKey: row.id,
        scheduledTime: row.scheduledTime,
        scheduleId: row.scheduleId,
      });
    } catch (error) {
      logger.warn(
        { err: error, scheduleId: row.scheduleId, occurrenceId: row.id },
        'cron handoff failed; the occurrence stays claimed for recovery',
      );
      return { execution: null, linked: false, error };
    }
    await faults?.afterHandoff?.(row, execution.id);
    const linked = await linkOccurrence(this.#deps, row, execution.id);
    return { execution, linked };
  }
}
