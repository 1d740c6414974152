import {
  type CronExecutionRow,
  ExecutionNotFoundError,
  type PipelineExecution,
  type PipelineResult,
  type PipelineStatus,
  PipelineTimeoutError,
  ScheduleOverlapError,
  sleep,
  TERMINAL_PIPELINE_STATUSES,
  ValidationError,
} from '@orreryjs/core';
import type { CronServiceOptions } from './options.js';
import { scheduleNameOf } from './schedule-context.js';

type BufferedTriggerDeps = Pick<CronServiceOptions, 'store' | 'executor' | 'settings'>;

const TERMINAL: ReadonlySet<PipelineStatus> = new Set(TERMINAL_PIPELINE_STATUSES);

/**
 * The handle `triggerCronSchedule` returns for a manual trigger that its `buffer_one` or
 * `buffer_all` schedule buffered behind an active occurrence. Its pipeline does not exist yet,
 * so:
 * - `id` is the manual ledger row's id, the idempotency key its pipeline will be created under
 *   (`getCronExecutionHistory` shows the row, and its `pipelineExecutionId` once handed off);
 * - `wait()` reads the ledger row every `cronPollIntervalMs` until a tick hands it off, then the
 *   pipeline until it ends, and resolves with its result; `timeoutMs` bounds the whole wait
 *   (without it, the wait for the handoff is unbounded). It rejects with ScheduleOverlapError
 *   when the row ends `skipped` (a newer buffered occurrence replaced it under `buffer_one`, or
 *   the schedule was paused or deleted), and with ExecutionNotFoundError when it was abandoned;
 * - `status()` is `pending` until the handoff, the pipeline's status after it, and `cancelled`
 *   for a row skipped or abandoned (nothing will run);
 * - `cancel()` cancels the pipeline once it exists; before, it raises ExecutionNotFoundError
 *   (pause the schedule to drop what it buffered).
 */
export function bufferedTriggerExecution(deps: BufferedTriggerDeps, row: CronExecutionRow): PipelineExecution {
  return {
    id: row.id,
    workflowName: row.workflowName,
    wait: (options) => waitForRun(deps, row, options?.timeoutMs),
    status: async () => {
      const current = await readRow(deps, row);
      if (current.status === 'handed_off') return deps.executor.getExecutionStatus(current.pipelineExecutionId!);
      return current.status === 'skipped' || current.status === 'abandoned' ? 'cancelled' : 'pending';
    },
    cancel: async () => {
      const current = await readRow(deps, row);
      if (current.status === 'handed_off') return deps.executor.cancelExecution(current.pipelineExecutionId!);
      throw new ExecutionNotFoundError(
        `The manual trigger ${row.id} of schedule "${scheduleName(row)}" has no pipeline to cancel yet (it is ${current.status}); pause the schedule to drop what it buffered.`,
      );
    },
  };
}

async function waitForRun(
  deps: BufferedTriggerDeps,
  row: CronExecutionRow,
  timeoutMs: number | undefined,
): Promise<PipelineResult> {
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !(timeoutMs >= 0))) {
    throw new ValidationError(`timeoutMs must be a non-negative number of milliseconds, got ${String(timeoutMs)}.`);
  }
  const endsAtMs = performance.now() + (timeoutMs ?? Number.POSITIVE_INFINITY);
  const pollMs = deps.settings.pollIntervalMs;
  for (;;) {
    const current = await readRow(deps, row);
    if (current.status === 'skipped') {
      throw new ScheduleOverlapError(
        `The manual trigger ${row.id} of schedule "${scheduleName(row)}" was buffered, then skipped: a newer occurrence replaced it (buffer_one), or the schedule was paused or deleted; nothing ran. Trigger again, with { overlapPolicy: 'allow' } to start at once.`,
        null,
      );
    }
    if (current.status === 'abandoned') {
      throw new ExecutionNotFoundError(
        `The manual trigger ${row.id} of schedule "${scheduleName(row)}" was abandoned before its pipeline started (${current.abandonReason ?? 'no reason recorded'}).`,
      );
    }
    if (current.status === 'handed_off') {
      const id = current.pipelineExecutionId!;
      if (TERMINAL.has(await deps.executor.getExecutionStatus(id))) return deps.executor.getExecutionResult(id);
    }
    const leftMs = endsAtMs - performance.now();
    if (leftMs <= 0) {
      throw new PipelineTimeoutError(
        `The manual trigger ${row.id} of schedule "${scheduleName(row)}" did not finish within ${timeoutMs} ms (it is ${current.status}); wait() again to keep waiting.`,
      );
    }
    await sleep(Math.min(pollMs, leftMs));
  }
}

async function readRow(deps: BufferedTriggerDeps, row: CronExecutionRow): Promise<CronExecutionRow> {
  // Retention keeps a row while it is buffered or claimed, or while its pipeline is unfinished.
  const current = await deps.store.getOccurrence(row.id);
  if (current === null) {
    throw new ExecutionNotFoundError(`The manual trigger ${row.id} is no longer in the cron ledger (retention).`);
  }
  return current;
}

function scheduleName(row: CronExecutionRow): string {
  return scheduleNameOf(row) ?? row.scheduleId;
}
