import {
  type ClaimedTask,
  type ContextDelta,
  mergeContext,
  type PipelineResult,
  type PipelineRow,
  type PipelineSummary,
  type TaskOutcome,
  type TaskResult,
  type TaskRow,
} from '@orreryjs/core';

function elapsedMs(from: Date | null, to: Date | null): number | undefined {
  return from === null || to === null ? undefined : to.getTime() - from.getTime();
}

/** A pipeline row as the public summary (no context, no tasks). */
export function toPipelineSummary(row: PipelineRow): PipelineSummary {
  const durationMs = elapsedMs(row.startedAt ?? row.createdAt, row.completedAt);
  return {
    executionId: row.id,
    workflowName: row.workflowName,
    workflowVersion: row.workflowVersion,
    status: row.status,
    createdAt: row.createdAt,
    scheduleId: row.scheduleId,
    scheduledTime: row.scheduledTime,
    ...(row.startedAt === null ? {} : { startedAt: row.startedAt }),
    ...(row.completedAt === null ? {} : { completedAt: row.completedAt }),
    ...(durationMs === undefined ? {} : { durationMs }),
    ...(row.error === null ? {} : { error: row.error }),
  };
}

/** A task row as the public task result. A skipped task never ran, so it reports 0 attempts. */
export function toTaskResult(row: TaskRow): TaskResult {
  const durationMs = row.status === 'skipped' ? undefined : elapsedMs(row.startedAt, row.completedAt);
  return {
    taskId: row.taskId,
    status: row.status,
    attempts: row.status === 'skipped' ? 0 : row.attempt,
    ...(row.startedAt === null || row.status === 'skipped' ? {} : { startedAt: row.startedAt }),
    ...(row.completedAt === null ? {} : { completedAt: row.completedAt }),
    ...(durationMs === undefined ? {} : { durationMs }),
    ...(row.error === null ? {} : { error: row.error }),
    ...(row.status !== 'completed' || row.output === null ? {} : { output: row.output }),
  };
}

/**
 * Outputs of the completed tasks among `tasks`, in canonical order (rows carry their
 * position in the workflow's canonical order).
 */
export function completedOutputs(tasks: readonly TaskRow[], only?: ReadonlySet<string>): ContextDelta[] {
  return [...tasks]
    .filter((t) => t.status === 'completed' && t.output !== null && (only === undefined || only.has(t.taskId)))
    .sort((a, b) => a.position - b.position)
    .map((t) => t.output as ContextDelta);
}

/**
 * A pipeline and its tasks as the public result: `finalContext` = deepMerge(input, outputs
 * of every completed task in canonical order).
 */
export function toPipelineResult(row: PipelineRow, tasks: readonly TaskRow[]): PipelineResult {
  const ordered = [...tasks].sort((a, b) => a.position - b.position);
  return {
    ...toPipelineSummary(row),
    finalContext: mergeContext(row.input, completedOutputs(ordered)),
    tasks: ordered.map(toTaskResult),
  };
}

/**
 * Every task row of a pipeline whose last task this process just committed, without reading
 * them back: the tasks that were terminal when it was claimed plus its own row as the commit
 * wrote it. Null when some other task ended after the claim (the snapshot is incomplete).
 */
export function finishedTaskRows(
  claimed: ClaimedTask,
  outcome: TaskOutcome,
  now: Date,
  taskCount: number,
): TaskRow[] | null {
  if (claimed.terminalTasks.length + 1 !== taskCount || outcome.status === 'retry') return null;
  const { task } = claimed;
  const own: TaskRow = {
    ...task,
    status: outcome.status,
    output: outcome.status === 'completed' ? outcome.output : null,
    error: outcome.status === 'failed' ? outcome.error : outcome.status === 'skipped' ? outcome.reason : null,
    failedAttempts: task.failedAttempts + (outcome.status === 'failed' ? 1 : 0),
    leaseOwner: null,
    leaseExpiresAt: null,
    completedAt: now,
  };
  return [...claimed.terminalTasks, own].sort((a, b) => a.position - b.position);
}
