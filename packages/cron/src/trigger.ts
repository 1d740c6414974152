import {
  type CronExecutionRow,
  newId,
  type PipelineExecution,
  ScheduleNotFoundError,
  ScheduleOverlapError,
  type ScheduleRow,
  WorkflowNotFoundError,
} from '@orreryjs/core';
import { bufferedTriggerExecution } from './buffered-trigger.js';
import type { Handoff } from './handoff.js';
import { reportBuffered, reportCancelled, reportSkipped } from './link.js';
import type { CronServiceOptions, WorkflowCatalog } from './options.js';
import { manualPlan } from './plan.js';
import { claimedOccurrence } from './schedule-context.js';
import type { ScheduleManager } from './schedules.js';
import { validateTriggerOptions } from './validate.js';

type TriggerDeps = Pick<
  CronServiceOptions,
  'store' | 'clock' | 'runnerId' | 'workflows' | 'executor' | 'settings' | 'logger' | 'emit' | 'inTransactionHandoff'
>;

/**
 * Fires a schedule now, enabled or not: writes an audited `manual` ledger row (random id, so
 * it never collides with a scheduled slot) and hands it off like any occurrence. It follows the
 * schedule's overlap policy (see {@link manualPlan}), decided in the row's own transaction under
 * the schedule's row lock, so concurrent triggers and ticks never both start; `{ overlapPolicy:
 * 'allow' }` starts it whatever the policy. A buffered trigger returns a handle whose pipeline
 * does not exist yet (see {@link bufferedTriggerExecution}).
 * If the handoff fails, its error is thrown and the row stays `claimed`: recovery hands it
 * off later, so a failed trigger still runs once and is never lost.
 * @throws ValidationError for bad options.
 * @throws ScheduleOverlapError for a `skip` schedule with an active occurrence (recorded `skipped`).
 * @throws ScheduleNotFoundError, WorkflowNotFoundError, or the executor's error.
 */
export async function triggerSchedule(
  deps: TriggerDeps,
  schedules: ScheduleManager,
  handoff: Handoff,
  idOrName: string,
  options?: unknown,
): Promise<PipelineExecution> {
  const force = validateTriggerOptions(options);
  const schedule = await schedules.resolve(idOrName);
  assertRunnable(deps.workflows, schedule);
  const now = deps.clock.now();
  const row = claimedOccurrence(schedule, now, { id: newId(), now, runnerId: deps.runnerId, source: 'manual' });
  let cancelled: readonly string[] = [];
  const result = await deps.store.insertManualOccurrence({
    row,
    plan: (locked, state) => {
      const plan = manualPlan(locked, state, force);
      cancelled = plan.cancelPipelineIds ?? [];
      return plan;
    },
  });
  if (result === null) {
    throw new ScheduleNotFoundError(`Schedule "${idOrName}" was deleted while it was being triggered; nothing ran.`);
  }
  const { row: stored, state } = result;
  if (stored.status === 'skipped') {
    reportSkipped(deps, stored);
    throw overlapError(schedule, stored, state.activePipelineIds?.[0] ?? null);
  }
  if (stored.status === 'buffered') {
    reportBuffered(deps, stored);
    return bufferedTriggerExecution(deps, stored);
  }
  await reportCancelled(deps, cancelled);
  const handedOff = await handoff.handOff(stored);
  if (handedOff.execution === null) throw handedOff.error;
  return handedOff.execution;
}

function overlapError(schedule: ScheduleRow, row: CronExecutionRow, activeId: string | null): ScheduleOverlapError {
  const name = schedule.name ?? schedule.id;
  const active =
    activeId === null ? 'an occurrence waiting to start' : `pipeline ${activeId} still pending, running or paused`;
  return new ScheduleOverlapError(
    `Schedule "${name}" (overlap policy skip) has ${active}: the manual trigger was recorded as skipped (occurrence ${row.id}) and started nothing. Trigger it again once that ends, or pass { overlapPolicy: 'allow' } to start one anyway.`,
    activeId,
  );
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
