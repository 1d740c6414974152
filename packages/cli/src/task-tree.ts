import { describeSignalWait, type SignalWait, signalWaitOf, type TaskResult, type WaitFor } from '@orreryjs/core';
import { oneLine } from './failure.js';
import { formatDuration, formatInstant } from './output.js';

/** A task of an execution with the dependencies its workflow declares, when known. */
export interface TaskNode extends TaskResult {
  dependsOn?: string[];
  /** The signal a waiting wait task waits for, and until when; absent for every other task. */
  signalWait?: SignalWait;
}

/** The structure of a workflow definition: a `Workflow` or a stored `WorkflowInfo`. */
export interface WorkflowShape {
  tasks: readonly { id: string; dependsOn?: readonly string[]; waitFor?: WaitFor | null }[];
}

/**
 * Pairs an execution's tasks with their dependencies from `workflow`, when the definition
 * has exactly the execution's task ids; otherwise (no definition, or one whose tasks changed
 * since) the tasks stay without `dependsOn` and draw flat.
 */
export function attachDependencies(tasks: readonly TaskResult[], workflow: WorkflowShape | undefined): TaskNode[] {
  const byId = new Map(workflow?.tasks.map((task) => [task.id, task]));
  const sameTasks = byId.size === tasks.length && tasks.every((task) => byId.has(task.taskId));
  if (!sameTasks) return tasks.map((task) => ({ ...task }));
  return tasks.map((task) => ({ ...task, dependsOn: [...(byId.get(task.taskId)?.dependsOn ?? [])] }));
}

/**
 * Marks each task of `tasks` that waits for a signal now with what it waits for, from the
 * definition's `waitFor` (task rows do not say which signal a task waits for).
 */
export function attachSignalWaits(tasks: readonly TaskNode[], workflow: WorkflowShape | undefined): TaskNode[] {
  const byId = new Map(workflow?.tasks.map((task) => [task.id, task]));
  return tasks.map((task) => {
    const signalWait = signalWaitOf(task, byId.get(task.taskId));
    return signalWait === null ? task : { ...task, signalWait };
  });
}

/**
 * Draws tasks as an indented tree with box-drawing characters, one line per task:
 * id, state, attempts and duration in aligned columns. `tasks` must be in canonical order
 * (topological, as the runner returns them). A task hangs under its last dependency in
 * that order, so it appears after all its dependencies; its other dependencies are named
 * after `also after:`. Tasks without known dependencies are roots, so a flat list results.
 * A line ends with the task's error, or with the signal it waits for; a map task's line names
 * its instance counts first (it is drawn once, however many items it has).
 */
export function drawTaskTree(tasks: readonly TaskNode[]): string[] {
  const position = new Map(tasks.map((task, index) => [task.taskId, index]));
  const children = new Map<string, TaskNode[]>();
  const roots: TaskNode[] = [];
  const extraParents = new Map<string, string[]>();
  for (const task of tasks) {
    const deps = [...(task.dependsOn ?? [])]
      .filter((dep) => position.has(dep))
      .sort((a, b) => position.get(a)! - position.get(b)!);
    const parent = deps.pop();
    if (parent === undefined) roots.push(task);
    else children.set(parent, [...(children.get(parent) ?? []), task]);
    extraParents.set(task.taskId, deps);
  }

  const rows: Array<{ label: string; task: TaskNode }> = [];
  const walk = (nodes: readonly TaskNode[], indent: string, nested: boolean) => {
    nodes.forEach((task, index) => {
      const last = index === nodes.length - 1;
      const branch = nested ? (last ? '└── ' : '├── ') : '';
      const also = extraParents.get(task.taskId) ?? [];
      const suffix = also.length > 0 ? ` (also after: ${also.join(', ')})` : '';
      rows.push({ label: `${indent}${branch}${task.taskId}${suffix}`, task });
      walk(children.get(task.taskId) ?? [], nested ? `${indent}${last ? '    ' : '│   '}` : indent, true);
    });
  };
  walk(roots, '', false);

  const labelWidth = Math.max(...rows.map((row) => row.label.length), 'TASK'.length);
  const statusWidth = Math.max(...rows.map((row) => row.task.status.length), 'STATE'.length);
  const header = `${'TASK'.padEnd(labelWidth)}  ${'STATE'.padEnd(statusWidth)}  ATTEMPTS  DURATION`;
  const lines = rows.map(({ label, task }) => {
    const line = `${label.padEnd(labelWidth)}  ${task.status.padEnd(statusWidth)}  ${String(task.attempts).padEnd(8)}  ${formatDuration(task.durationMs)}`;
    const counts = task.instances === undefined ? [] : [describeInstances(task.instances)];
    if (task.signalWait !== undefined) return [line, describeSignalWait(task.signalWait, formatInstant)].join('  ');
    return [line, ...counts, ...(task.error === undefined ? [] : [oneLine(task.error)])].join('  ');
  });
  return [header, ...lines];
}

/** A map task's instances by status, as its line in the tree shows them. */
function describeInstances(counts: NonNullable<TaskResult['instances']>): string {
  return `items ${counts.total}: ${counts.completed} completed, ${counts.running} running, ${counts.failed} failed`;
}
