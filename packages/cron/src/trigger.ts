import { DatabaseError, newId, type PipelineExecution, type ScheduleRow, WorkflowNotFoundError } from '@orreryjs/core';
import type { Handoff } from './handoff.js';
import type { CronServiceOptions, WorkflowCatalog } from './options.js';
import { claimedOccurrence } from './schedule-context.js';
import type { ScheduleManager } from './schedules.js';

type TriggerDeps = Pick<CronServiceOptions, 'store' | 'clock' | 'runnerId' | 'workflows'>;

/**
 * Fires a schedule now, enabled or not: writes an audited `manual` ledger row (random id, so
 * it never collides with a scheduled slot) and hands it off like any occurrence.
 * If the handoff fails, its error is thrown and the row stays `claimed`: recovery hands it
 * off later, so a failed trigger still runs once and is never lost.
 * @throws ScheduleNotFoundError, WorkflowNotFoundError, or the executor's error.
 */
export async function triggerSchedule(
  deps: TriggerDeps,
  schedules: ScheduleManager,
  handoff: Handoff,
  idOrName: string,
): Promise<PipelineExecution> {
  const schedule = await schedules.resolve(idOrName);
  assertRunnable(deps.workflows, schedule);
  const now = deps.clock.now();
  const row = claimedOccurrence(schedule, now, { id: newId(), now, runnerId: deps.runnerId, source: 'manual' });
  const [stored] = (await deps.store.insertOccurrences([row])).claimed;
  if (stored === undefined) throw new DatabaseError(`The manual occurrence ${row.id} could not be written; retry.`);
  const result = await handoff.handOff(stored);
  if (result.execution === null) throw result.error;
  return result.execution;
}

/**
 * Refuses to start a schedule's workflow that this process has not registered.
 * @throws WorkflowNotFoundError naming the workflow.
 */
export function assertRunnable(workflows: WorkflowCatalog, schedule: ScheduleRow): void {
  if (workflows.has(schedule.workflowName)) return;
  throw new WorkflowNotFoundError(
    `Schedule "${schedule.name ?? schedule.id}" runs workflow "${schedule.workflowName}", which this runner has not registered; register it with runner.register(workflow).`,
  );
}
