import {
  isTriggerMet,
  type JsonObject,
  mergeContext,
  type TaskDefinition,
  type TaskRow,
  type TerminalTaskStatus,
  type Workflow,
} from '@orreryjs/core';
import { completedOutputs } from '../result.js';

/**
 * The data a task starts with: deepMerge(pipeline input, outputs of its completed ancestors
 * in canonical order). Outputs of tasks that are not its ancestors are invisible to it, even
 * when they finished first, so a task sees the same context whatever the timing.
 */
export function taskInput(
  workflow: Workflow,
  taskId: string,
  pipelineInput: JsonObject,
  terminalTasks: readonly TaskRow[],
): JsonObject {
  const ancestors = workflow.ancestors.get(taskId) ?? [];
  if (ancestors.length === 0) return pipelineInput;
  return mergeContext(pipelineInput, completedOutputs(terminalTasks, new Set(ancestors)));
}

/**
 * Why a task must be skipped because of its trigger rule, judged from its dependencies'
 * terminal states; null when it should run (always for a task without dependencies).
 */
export function unmetTrigger(task: TaskDefinition, terminalTasks: readonly TaskRow[]): string | null {
  const dependencies = [...new Set(task.dependsOn ?? [])];
  if (dependencies.length === 0) return null;
  const statusOf = new Map(terminalTasks.map((t) => [t.taskId, t.status]));
  const statuses = dependencies.map((id) => statusOf.get(id) as TerminalTaskStatus);
  const rule = task.trigger ?? 'all_success';
  if (isTriggerMet(rule, statuses)) return null;
  const states = dependencies.map((id, i) => `${id}: ${statuses[i]}`).join(', ');
  return `trigger rule ${rule} not met (${states})`;
}
