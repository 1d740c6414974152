import { createHash } from 'node:crypto';
import type { Context } from './context.js';
import { WorkflowValidationError } from './errors.js';
import type { RetryPolicy } from './retry.js';

/** When a task runs, judged from the terminal states of its dependencies. */
export type TriggerRule = 'all_success' | 'all_done' | 'one_success' | 'one_failed' | 'none_failed';

/** What a running task is told about itself. */
export interface TaskRunInfo {
  executionId: string;
  workflowName: string;
  taskId: string;
  /** 1-based: 2 means the first attempt failed or its runner died. */
  attempt: number;
  /** Aborted on timeout, cancel, pause, lost lease or shutdown. */
  signal: AbortSignal;
  /** Set when a cron occurrence started the pipeline. */
  scheduledTime?: Date;
}

/** One node of a workflow's DAG. */
export interface TaskDefinition {
  /** Unique in its workflow, matching /^[A-Za-z_][A-Za-z0-9_.-]*$/. */
  id: string;
  /** Ids of the tasks that must be terminal before this one is considered. */
  dependsOn?: string[];
  /** The work. Writes to `ctx` become the task's output when the attempt succeeds. */
  run(ctx: Context, info: TaskRunInfo): Promise<void> | void;
  /** Retries after a failed attempt. */
  retry?: RetryPolicy;
  /** Per-attempt time limit; @default the runner's taskTimeoutMs */
  timeoutMs?: number;
  /** @default 'all_success' */
  trigger?: TriggerRule;
  /** Returning false skips the task. */
  when?: (ctx: Context) => boolean;
}

/** A validated workflow: its tasks in canonical (topological, then declaration) order. */
export interface Workflow {
  readonly name: string;
  readonly description?: string;
  /** Stable hash of the structure (ids, dependencies, triggers, retry policies). */
  readonly version: string;
  /** Tasks in canonical order: topological, ties broken by position in the definition. */
  readonly tasks: readonly TaskDefinition[];
  /** Task lookup by id. */
  readonly taskById: ReadonlyMap<string, TaskDefinition>;
  /** Direct dependents of each task id. */
  readonly dependents: ReadonlyMap<string, readonly string[]>;
  /** Transitive ancestors of each task id, in canonical order. */
  readonly ancestors: ReadonlyMap<string, readonly string[]>;
}

/** The argument of {@link defineWorkflow}. */
export interface WorkflowDefinition {
  name: string;
  description?: string;
  tasks: TaskDefinition[];
}

const TASK_ID = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const TRIGGERS = new Set<TriggerRule>(['all_success', 'all_done', 'one_success', 'one_failed', 'none_failed']);

/**
 * Validates a workflow and orders its tasks canonically.
 * @throws WorkflowValidationError for an empty workflow, a bad or duplicate task id, an
 * unknown dependency, an unknown trigger, or a cycle (the message names the tasks on it).
 */
export function defineWorkflow(definition: WorkflowDefinition): Workflow {
  const { name, description, tasks } = definition;
  if (typeof name !== 'string' || name.trim() === '') {
    throw new WorkflowValidationError('Workflow name must be a non-empty string.');
  }
  if (!Array.isArray(tasks) || tasks.length === 0) {
    throw new WorkflowValidationError(`Workflow "${name}" has no tasks; add at least one task.`);
  }
  const taskById = indexTasks(name, tasks);
  const ordered = canonicalOrder(name, tasks, taskById);
  const dependents = new Map<string, string[]>(ordered.map((t) => [t.id, []]));
  for (const task of ordered) for (const dep of task.dependsOn ?? []) dependents.get(dep)?.push(task.id);
  return Object.freeze({
    name,
    ...(description === undefined ? {} : { description }),
    version: structureHash(ordered),
    tasks: Object.freeze(ordered),
    taskById,
    dependents,
    ancestors: ancestorsOf(ordered),
  });
}

function indexTasks(name: string, tasks: TaskDefinition[]): Map<string, TaskDefinition> {
  const byId = new Map<string, TaskDefinition>();
  for (const task of tasks) {
    if (typeof task?.id !== 'string' || !TASK_ID.test(task.id)) {
      throw new WorkflowValidationError(
        `Workflow "${name}": task id ${JSON.stringify(task?.id)} is invalid; use letters, digits, "_", "." or "-", starting with a letter or "_".`,
      );
    }
    if (byId.has(task.id)) throw new WorkflowValidationError(`Workflow "${name}": duplicate task id "${task.id}".`);
    if (typeof task.run !== 'function') {
      throw new WorkflowValidationError(`Workflow "${name}": task "${task.id}" has no run function.`);
    }
    if (task.trigger !== undefined && !TRIGGERS.has(task.trigger)) {
      throw new WorkflowValidationError(
        `Workflow "${name}": task "${task.id}" has unknown trigger "${task.trigger}"; use one of ${[...TRIGGERS].join(', ')}.`,
      );
    }
    byId.set(task.id, task);
  }
  for (const task of tasks) {
    for (const dep of task.dependsOn ?? []) {
      if (!byId.has(dep)) {
        throw new WorkflowValidationError(`Workflow "${name}": task "${task.id}" depends on unknown task "${dep}".`);
      }
    }
  }
  return byId;
}

/** Kahn's algorithm, always taking the earliest-declared ready task, so order is stable. */
function canonicalOrder(name: string, tasks: TaskDefinition[], byId: Map<string, TaskDefinition>): TaskDefinition[] {
  const remaining = new Map(tasks.map((t) => [t.id, new Set(t.dependsOn ?? [])]));
  const ordered: TaskDefinition[] = [];
  while (remaining.size > 0) {
    const next = tasks.find((t) => remaining.get(t.id)?.size === 0);
    if (next === undefined)
      throw new WorkflowValidationError(`Workflow "${name}" has a cycle: ${findCycle(remaining).join(' -> ')}.`);
    remaining.delete(next.id);
    for (const deps of remaining.values()) deps.delete(next.id);
    ordered.push(byId.get(next.id) as TaskDefinition);
  }
  return ordered;
}

/** Walks dependencies among the unordered tasks until one repeats: that loop is a cycle. */
function findCycle(remaining: Map<string, Set<string>>): string[] {
  const path: string[] = [];
  let current = remaining.keys().next().value as string;
  while (!path.includes(current)) {
    path.push(current);
    current = [...(remaining.get(current) ?? [])][0] as string;
  }
  return [...path.slice(path.indexOf(current)), current];
}

function ancestorsOf(ordered: TaskDefinition[]): Map<string, string[]> {
  const position = new Map(ordered.map((t, i) => [t.id, i]));
  const sets = new Map<string, Set<string>>();
  for (const task of ordered) {
    const set = new Set<string>();
    for (const dep of task.dependsOn ?? []) {
      set.add(dep);
      for (const a of sets.get(dep) ?? []) set.add(a);
    }
    sets.set(task.id, set);
  }
  const byPosition = (a: string, b: string) => (position.get(a) ?? 0) - (position.get(b) ?? 0);
  return new Map([...sets].map(([id, set]) => [id, [...set].sort(byPosition)]));
}

function structureHash(ordered: TaskDefinition[]): string {
  const shape = ordered.map((t) => ({
    id: t.id,
    dependsOn: [...(t.dependsOn ?? [])].sort(),
    trigger: t.trigger ?? 'all_success',
    retry: t.retry ? { ...t.retry, retryOn: t.retry.retryOn ? 'custom' : undefined } : null,
    timeoutMs: t.timeoutMs ?? null,
    when: t.when ? 'custom' : null,
  }));
  return createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 16);
}
