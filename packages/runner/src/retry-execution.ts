import type { PipelineRow, RetriedTask, TaskRow, WorkflowStore } from '@orreryjs/core';
import { RETRYABLE_PIPELINE_STATUSES, ValidationError, WorkflowNotFoundError } from '@orreryjs/core';
import type { WorkflowRegistry } from './registry.js';

/** The statuses `retryExecution` accepts. */
const RETRYABLE: ReadonlySet<string> = new Set(RETRYABLE_PIPELINE_STATUSES);

/** What a retry sends back to run. */
export interface RetryPlan {
  tasks: RetriedTask[];
  /** Task ids, in canonical order, for the `pipeline:retried` event. */
  taskIds: string[];
}

/**
 * @throws ValidationError unless the pipeline is `failed` or `cancelled`: a pending, running
 *   or paused one has nothing to retry, and a completed one nothing that failed.
 */
export function assertRetryable(row: PipelineRow): asserts row is PipelineRow & { status: 'failed' | 'cancelled' } {
  if (RETRYABLE.has(row.status)) return;
  throw new ValidationError(
    `Execution ${row.id} is ${row.status}; only a failed or cancelled execution can be retried${row.status === 'paused' ? ' (resume a paused one with resumeExecution)' : ''}.`,
  );
}

/**
 * The tasks a retry runs again: every failed or cancelled task, and every task skipped
 * downstream of one (its trigger saw the failure; it is judged again once the failed task
 * has run). A task skipped by its own `when` or trigger with no failed ancestor, and every
 * completed task, is kept. Each retried task waits for its retried dependencies.
 * @param dependsOn the direct dependencies of a task id, from the definition that ran.
 */
export function planRetry(tasks: readonly TaskRow[], dependsOn: (taskId: string) => readonly string[]): RetryPlan {
  const ordered = [...tasks].sort((a, b) => a.position - b.position);
  const retried = new Set<string>();
  // Canonical order is topological, so every dependency is decided before its dependents.
  for (const task of ordered) {
    const again =
      task.status === 'failed' ||
      task.status === 'cancelled' ||
      (task.status !== 'completed' && dependsOn(task.taskId).some((dep) => retried.has(dep)));
    if (again) retried.add(task.taskId);
  }
  const chosen = ordered.filter((task) => retried.has(task.taskId));
  return {
    tasks: chosen.map((task) => ({
      id: task.id,
      pendingDeps: new Set(dependsOn(task.taskId).filter((dep) => retried.has(dep))).size,
    })),
    taskIds: chosen.map((task) => task.taskId),
  };
}

/**
 * The direct dependencies of each task of the workflow version a pipeline ran: the registered
 * definition when this process has that version, else the one a runner stored.
 * @throws WorkflowNotFoundError when no runner stored that version.
 */
export async function taskDependencies(
  row: PipelineRow,
  registry: WorkflowRegistry,
  workflows: WorkflowStore,
): Promise<Map<string, readonly string[]>> {
  const registered = registry.find(row.workflowName);
  const tasks =
    registered?.version === row.workflowVersion
      ? registered.tasks.map((task) => ({ id: task.id, dependsOn: task.dependsOn ?? [] }))
      : (await workflows.listWorkflows()).find(
          (info) => info.name === row.workflowName && info.version === row.workflowVersion,
        )?.tasks;
  if (tasks === undefined) {
    throw new WorkflowNotFoundError(
      `Execution ${row.id} ran version ${row.workflowVersion} of workflow "${row.workflowName}", which no runner has stored, so its task dependencies are unknown; start a runner that registers that version to retry it.`,
    );
  }
  return new Map(tasks.map((task) => [task.id, task.dependsOn]));
}
