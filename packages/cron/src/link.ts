import type { CronExecutionRow } from '@orreryjs/core';
import type { CronServiceOptions } from './options.js';
import { emitEvent } from './options.js';
import { scheduleNameOf } from './schedule-context.js';

type LinkDeps = Pick<CronServiceOptions, 'store' | 'clock' | 'logger' | 'emit'>;

/**
 * Phase 2 of the cron cycle: records the occurrence's pipeline (`claimed` → `handed_off`) and
 * reports `cron:fired`. Returns false, having logged why, when the row was no longer
 * `claimed` (recovery took it) or the write failed: the pipeline exists under the row's
 * idempotency key either way, so recovery links that same pipeline and never starts another.
 */
export async function linkOccurrence(
  deps: LinkDeps,
  row: CronExecutionRow,
  pipelineExecutionId: string,
): Promise<boolean> {
  const handedOffAt = deps.clock.now();
  let linked: boolean;
  try {
    linked = await deps.store.linkOccurrence(row.id, pipelineExecutionId, handedOffAt);
  } catch (error) {
    deps.logger.warn(
      { err: error, scheduleId: row.scheduleId, occurrenceId: row.id, pipelineExecutionId },
      'cron phase 2 failed; recovery will link the pipeline',
    );
    return false;
  }
  if (!linked) {
    deps.logger.info(
      { scheduleId: row.scheduleId, occurrenceId: row.id, pipelineExecutionId },
      'cron occurrence was no longer claimed at phase 2; recovery owns it',
    );
    return false;
  }
  reportFired(deps, row, pipelineExecutionId, handedOffAt);
  return true;
}

/** Emits `cron:fired` for an occurrence linked to its pipeline at `handedOffAt`. */
export function reportFired(
  deps: Pick<CronServiceOptions, 'logger' | 'emit'>,
  row: CronExecutionRow,
  pipelineExecutionId: string,
  handedOffAt: Date,
): void {
  emitEvent(deps, 'cron:fired', {
    scheduleId: row.scheduleId,
    scheduleName: scheduleNameOf(row),
    occurrenceId: row.id,
    scheduledTime: row.scheduledTime,
    source: row.source,
    pipelineExecutionId,
    lagMs: handedOffAt.getTime() - row.scheduledTime.getTime(),
  });
}
