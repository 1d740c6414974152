import type { CronExecutionRow, NewCronExecution } from '@orreryjs/core';
import type { CronServiceOptions } from './options.js';
import { emitEvent } from './options.js';
import { scheduleNameOf } from './schedule-context.js';

type LinkDeps = Pick<CronServiceOptions, 'store' | 'executor' | 'clock' | 'logger' | 'emit'>;
type CancelDeps = Pick<CronServiceOptions, 'executor' | 'inTransactionHandoff' | 'logger'>;

/**
 * Phase 2 of the cron cycle: records the occurrence's pipeline (`claimed` → `handed_off`) and
 * reports `cron:fired`. Returns false, having logged why, when the row was no longer
 * `claimed` (recovery took it) or the write failed: the pipeline exists under the row's
 * idempotency key either way, so recovery links that same pipeline and never starts another.
 * A row a newer `cancel_other` occurrence replaced meanwhile has its pipeline cancelled.
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
    await cancelIfReplaced(deps, row, pipelineExecutionId);
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

/** Emits `cron:skipped` for an occurrence skipped for overlap. */
export function reportSkipped(deps: Pick<CronServiceOptions, 'logger' | 'emit'>, row: NewCronExecution): void {
  emitEvent(deps, 'cron:skipped', {
    scheduleId: row.scheduleId,
    scheduleName: scheduleNameOf(row),
    occurrenceId: row.id,
    scheduledTime: row.scheduledTime,
    reason: 'overlap',
  });
}

/** Emits `cron:buffered` for an occurrence that waits for the active one of its schedule. */
export function reportBuffered(deps: Pick<CronServiceOptions, 'logger' | 'emit'>, row: NewCronExecution): void {
  emitEvent(deps, 'cron:buffered', {
    scheduleId: row.scheduleId,
    scheduleName: scheduleNameOf(row),
    occurrenceId: row.id,
    scheduledTime: row.scheduledTime,
  });
}

/**
 * For a pipeline whose row turned out not to be `claimed` any more when it was to be linked:
 * when a newer `cancel_other` occurrence replaced the row (`skipped`) while the pipeline was
 * being created, the pipeline is cancelled, as cancel_other cancels whatever it replaces.
 * Never throws: a failure is logged.
 */
export async function cancelIfReplaced(
  deps: Pick<CronServiceOptions, 'store' | 'executor' | 'logger'>,
  row: CronExecutionRow,
  pipelineExecutionId: string,
): Promise<void> {
  try {
    if ((await deps.store.getOccurrence(row.id))?.status !== 'skipped') return;
    await deps.executor.cancelExecution(pipelineExecutionId);
    deps.logger.info(
      { scheduleId: row.scheduleId, occurrenceId: row.id, pipelineExecutionId },
      'cron occurrence was replaced by a newer one while its pipeline started; cancelled it',
    );
  } catch (error) {
    deps.logger.warn(
      { err: error, scheduleId: row.scheduleId, occurrenceId: row.id, pipelineExecutionId },
      'cron could not cancel the pipeline of a replaced occurrence',
    );
  }
}

/**
 * `cancel_other`: after a commit that replaced these pipelines, which that same transaction
 * (a tick's claim, or a manual trigger) already cancelled in storage. The executor that shares
 * the database is told, to abort their tasks running here at once; any other executor is asked
 * to cancel them (a no-op in storage for one already cancelled). Never throws: a failure is
 * logged, and the cancel itself is committed.
 */
export async function reportCancelled(deps: CancelDeps, ids: ReadonlySet<string> | readonly string[]): Promise<void> {
  const list = [...ids];
  if (list.length === 0) return;
  const { executor, inTransactionHandoff, logger } = deps;
  if (inTransactionHandoff !== undefined) {
    try {
      await inTransactionHandoff.cancelled(list);
    } catch (error) {
      logger.warn({ err: error, pipelineExecutionIds: list }, 'cancel_other could not report its cancels');
    }
    return;
  }
  for (const id of list) {
    try {
      await executor.cancelExecution(id);
    } catch (error) {
      logger.warn({ err: error, pipelineExecutionId: id }, 'cancel_other could not cancel a pipeline');
    }
  }
}
