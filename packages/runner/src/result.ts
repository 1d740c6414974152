import {
  type ContextDelta,
  instanceResult,
  type MapInstance,
  type MapInstanceCounts,
  mergeContext,
  type PipelineResult,
  type PipelineRow,
  type PipelineSummary,
  type QueuedGroup,
  type TaskAttempt,
  type TaskResult,
  type TaskRow,
  type WaitingFor,
} from '@orreryjs/core';

function elapsedMs(from: Date | null, to: Date | null): number | undefined {
  return from === null || to === null ? undefined : to.getTime() - from.getTime();
}

/**
 * A pipeline row as the public summary (no context, no tasks). `queued` is the full group a
 * queued pipeline waits for (listQueuedGroups), `now` what decides whether its runAt is still ahead.
 */
export function toPipelineSummary(row: PipelineRow, queued: QueuedGroup | undefined, now: Date): PipelineSummary {
  return { ...pipelineFields(row), runAt: row.runAt, priority: row.priority, waitingFor: waitingFor(row, queued, now) };
}

/** Why a pending pipeline has not started: a full concurrency group first, then a runAt still ahead. */
function waitingFor(row: PipelineRow, queued: QueuedGroup | undefined, now: Date): WaitingFor | null {
  if (row.status !== 'pending') return null;
  if (queued !== undefined)
    return { kind: 'concurrency', group: queued.group, active: queued.active, limit: queued.limit };
  if (row.runAt !== null && row.runAt.getTime() > now.getTime()) return { kind: 'runAt', runAt: row.runAt };
  return null;
}

/** The fields a pipeline's result and its summary share. */
function pipelineFields(row: PipelineRow) {
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

/**
 * Every attempt of a task that ended: the stored ones that did not complete, then its completed
 * attempt, which is not stored (the success path writes nothing more) but read off the row: its
 * attempt, the runner that claimed it, its start and its completion.
 */
export function attemptHistory(row: TaskRow): TaskAttempt[] {
  const attempts: TaskAttempt[] = (row.attemptHistory ?? []).map((stored) => ({
    attempt: stored.attempt,
    runnerId: stored.runnerId,
    startedAt: new Date(stored.startedAt),
    endedAt: new Date(stored.endedAt),
    outcome: stored.outcome,
    ...(stored.error === null ? {} : { error: stored.error }),
  }));
  if (row.status === 'completed' && row.startedAt !== null && row.completedAt !== null) {
    attempts.push({
      attempt: row.attempt,
      runnerId: row.runnerId,
      startedAt: row.startedAt,
      endedAt: row.completedAt,
      outcome: 'completed',
    });
  }
  return attempts;
}

/** An instance row of a map task (see core's map.ts) as the public {@link MapInstance}. */
export function toMapInstance(row: TaskRow): MapInstance {
  return {
    index: row.mapIndex ?? 0,
    item: row.mapItem?.value ?? null,
    status: row.status,
    attempts: row.attempt,
    startedAt: row.startedAt,
    completedAt: row.completedAt,
    error: row.error,
    result: row.status === 'completed' ? instanceResult(row) : null,
  };
}

/** A task row as the public task result. A skipped task never ran, so it reports 0 attempts. */
export function toTaskResult(row: TaskRow, instances?: MapInstanceCounts): TaskResult {
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
    attemptHistory: attemptHistory(row),
    // Only while the task waits: once it ends, the deadline no longer says anything.
    ...(row.status !== 'ready' || row.waitsUntil == null ? {} : { waitsUntil: row.waitsUntil }),
    ...(instances === undefined
      ? {}
      : {
          instances: {
            total: instances.total,
            completed: instances.completed,
            failed: instances.failed,
            running: instances.running,
          },
        }),
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
export function toPipelineResult(
  row: PipelineRow,
  tasks: readonly TaskRow[],
  instances: readonly MapInstanceCounts[] = [],
): PipelineResult {
  const ordered = [...tasks].sort((a, b) => a.position - b.position);
  const countsOf = new Map(instances.map((counts) => [counts.taskId, counts]));
  return {
    ...pipelineFields(row),
    finalContext: mergeContext(row.input, completedOutputs(ordered)),
    tasks: ordered.map((task) => toTaskResult(task, countsOf.get(task.taskId))),
  };
}
