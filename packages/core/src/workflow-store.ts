import type { ConcurrencyRule, RateLimit } from './flow-control.js';
import { RETRY_DEFAULTS, type RetryPolicy } from './retry.js';
import type { TriggerRule, WaitFor, Workflow } from './workflow.js';

/** A task of a stored workflow definition: its structure, without code. */
export interface WorkflowTaskInfo {
  id: string;
  dependsOn: string[];
  trigger: TriggerRule;
  /** The task's retry policy with every default filled in; `retryOn` is code and is not stored. */
  retry: Required<Omit<RetryPolicy, 'retryOn'>>;
  /** The task's own time limit, or null for the runner's `taskTimeoutMs`. */
  timeoutMs: number | null;
  /** True when the task has a `when` guard (code, not stored). */
  hasWhen: boolean;
  /** Its `delayMs`; absent or null for none (definitions stored before delays existed have none). */
  delayMs?: number | null;
  /** Its `rateLimit`; absent or null for none. */
  rateLimit?: RateLimit | null;
  /** A wait task's `waitFor`; absent or null for a task with code. */
  waitFor?: WaitFor | null;
}

/**
 * One registered version of a workflow, as stored in the `workflows` table: what a process
 * without the task code (a client, the CLI) needs to start it, schedule it and show it.
 */
export interface WorkflowInfo {
  name: string;
  /** The workflow's structure hash (see {@link Workflow.version}). */
  version: string;
  description: string | null;
  /** Tasks in canonical order. */
  tasks: WorkflowTaskInfo[];
  /** Its concurrency rules, defaults filled in; null when it has none. */
  concurrency: ConcurrencyRule[] | null;
  /** Its pipelines' priority; null when the definition names none (0). */
  priority: number | null;
  /** When a runner first registered this version. */
  registeredAt: Date;
  /** When a runner that has this version last registered it or heartbeated. */
  lastSeenAt: Date;
}

/** What a runner writes for each workflow it registers. */
export type WorkflowDefinitionRow = Omit<WorkflowInfo, 'registeredAt' | 'lastSeenAt'>;

/**
 * Storage port for the `workflows` table: one row per (name, version), upserted by the
 * runners that register the workflow and read by clients that start it by name.
 */
export interface WorkflowStore {
  /**
   * Inserts each (name, version) not yet stored with `registeredAt = lastSeenAt = now`; for
   * one already stored, refreshes `description` and moves `lastSeenAt` forward to `now`
   * (never back), keeping `registeredAt`. One transaction.
   */
  upsertWorkflows(workflows: readonly WorkflowDefinitionRow[], now: Date): Promise<void>;
  /** Every stored version, by name, then oldest registration first. */
  listWorkflows(): Promise<WorkflowInfo[]>;
  /** The latest registered version of `name` (greatest `registeredAt`, then version), or null. */
  getLatestWorkflow(name: string): Promise<WorkflowInfo | null>;
}

/** The stored definition of a workflow: its structure, with retry defaults filled in and no code. */
export function workflowDefinitionRow(workflow: Workflow): WorkflowDefinitionRow {
  return {
    name: workflow.name,
    version: workflow.version,
    description: workflow.description ?? null,
    concurrency: workflow.concurrency.length === 0 ? null : workflow.concurrency.map((rule) => ({ ...rule })),
    priority: workflow.priority === 0 ? null : workflow.priority,
    tasks: workflow.tasks.map((task) => ({
      id: task.id,
      dependsOn: [...(task.dependsOn ?? [])],
      trigger: task.trigger ?? 'all_success',
      retry: {
        maxAttempts: task.retry?.maxAttempts ?? RETRY_DEFAULTS.maxAttempts,
        backoff: task.retry?.backoff ?? RETRY_DEFAULTS.backoff,
        initialDelayMs: task.retry?.initialDelayMs ?? RETRY_DEFAULTS.initialDelayMs,
        maxDelayMs: task.retry?.maxDelayMs ?? RETRY_DEFAULTS.maxDelayMs,
        jitter: task.retry?.jitter ?? RETRY_DEFAULTS.jitter,
      },
      timeoutMs: task.timeoutMs ?? null,
      hasWhen: task.when !== undefined,
      ...(task.delayMs === undefined ? {} : { delayMs: task.delayMs }),
      ...(task.rateLimit === undefined ? {} : { rateLimit: { ...task.rateLimit } }),
      ...(task.waitFor === undefined ? {} : { waitFor: { ...task.waitFor } }),
    })),
  };
}
