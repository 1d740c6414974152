import {
  defineWorkflow,
  NonRetryableError,
  type Workflow,
  type WorkflowInfo,
  WorkflowNotFoundError,
  type WorkflowStore,
} from '@orreryjs/core';
import type { WorkflowCatalog } from '@orreryjs/cron';
import type { WorkflowRegistry } from './registry.js';

/** Most stored definitions kept as built workflows; they are tiny, but names and versions accumulate. */
const BUILT_LIMIT = 1000;

/**
 * How long a client trusts the latest stored version of a name before reading the table again.
 * A client starting work in a loop would otherwise pay one extra query per pipeline; a new
 * version a runner registers is picked up within this time (a deploy is never that precise).
 */
export const LATEST_VERSION_CACHE_MS = 1_000;

/**
 * The workflows a client or runner can start and schedule: those this process registered
 * (its registry: code it runs) and those any runner stored in the `workflows` table. A
 * registered workflow wins over the table; a name only in the table starts its latest
 * registered version. What the process *claims* stays its registry alone: {@link names} (read
 * by the cron tick and recovery) lists only registered workflows.
 */
export class KnownWorkflows implements WorkflowCatalog {
  readonly #registry: WorkflowRegistry;
  readonly #store: WorkflowStore;
  /** Names in the table at the last {@link refresh}: what {@link has} answers synchronously for the cron service. */
  #stored = new Set<string>();
  readonly #built = new Map<string, Workflow>();
  /** The latest stored version of each name recently resolved, and when it was read (performance.now()). */
  readonly #latest = new Map<string, { workflow: Workflow; readAtMs: number }>();

  constructor(registry: WorkflowRegistry, store: WorkflowStore) {
    this.#registry = registry;
    this.#store = store;
  }

  /** Registered here, or stored at the last {@link refresh}. */
  has(name: string): boolean {
    return this.#registry.has(name) || this.#stored.has(name);
  }

  /** The registered workflows: those whose schedules this process's cron tick and recovery take. */
  names(): string[] {
    return this.#registry.names();
  }

  /**
   * Re-reads the names stored in the table, so that {@link has} sees workflows registered by
   * other processes; returns every known name, sorted.
   * @throws DatabaseError when the table cannot be read.
   */
  async refresh(): Promise<string[]> {
    const rows = await this.#store.listWorkflows();
    this.#stored = new Set(rows.map((row) => row.name));
    return [...new Set([...this.#registry.names(), ...this.#stored])].sort();
  }

  /**
   * The workflow to start under `name`: the registered one, else the latest version stored
   * in the table (its tasks never run here: a runner that registered it claims them).
   * @throws WorkflowNotFoundError naming every known workflow, when neither has it.
   * @throws DatabaseError when the table cannot be read.
   */
  async resolve(name: string): Promise<Workflow> {
    const registered = typeof name === 'string' ? this.#registry.find(name) : undefined;
    // A registered workflow is always the one started: it is the code this process runs.
    if (registered !== undefined) return registered;
    if (typeof name !== 'string') throw await this.notFound(name);
    const cached = this.#latest.get(name);
    if (cached !== undefined && performance.now() - cached.readAtMs < LATEST_VERSION_CACHE_MS) return cached.workflow;
    const readAtMs = performance.now();
    const info = await this.#store.getLatestWorkflow(name);
    if (info === null) throw await this.notFound(name);
    const workflow = this.#build(info);
    if (this.#latest.size >= BUILT_LIMIT) this.#latest.clear();
    this.#latest.set(name, { workflow, readAtMs });
    return workflow;
  }

  /**
   * Checks that `name` is a known workflow: registered here, or (re-reading the stored names) stored by some runner.
   * @throws WorkflowNotFoundError naming every known workflow.
   */
  async assertKnown(name: unknown): Promise<void> {
    if (typeof name === 'string' && this.#registry.has(name)) return;
    const known = await this.refresh();
    if (typeof name === 'string' && known.includes(name)) return;
    throw notFoundError(name, known);
  }

  /** The error for an unknown name, listing the registered and stored workflows. */
  async notFound(name: unknown): Promise<WorkflowNotFoundError> {
    return notFoundError(name, await this.refresh());
  }

  #build(info: WorkflowInfo): Workflow {
    const key = `${info.name}\u0000${info.version}`;
    let workflow = this.#built.get(key);
    if (workflow === undefined) {
      workflow = workflowFromInfo(info);
      if (this.#built.size >= BUILT_LIMIT) this.#built.delete(this.#built.keys().next().value as string);
      this.#built.set(key, workflow);
    }
    return workflow;
  }
}

function notFoundError(name: unknown, known: readonly string[]): WorkflowNotFoundError {
  const listed = known.length === 0 ? 'no runner has registered any workflow yet' : `known: ${known.join(', ')}`;
  return new WorkflowNotFoundError(
    `Workflow ${JSON.stringify(name)} is not registered by this process nor by any runner on this database (${listed}); start a runner that registers it (DefaultRunner.create({ workflows }) or \`orrery worker\`), or check the name.`,
  );
}

/**
 * A stored definition as a Workflow with the stored version: enough to write its pipeline
 * (task rows and dependency counts). Its tasks have no code; they are only ever run by a
 * runner that registered the real workflow.
 */
export function workflowFromInfo(info: WorkflowInfo): Workflow {
  const built = defineWorkflow({
    name: info.name,
    ...(info.description === null ? {} : { description: info.description }),
    ...(info.concurrency === null ? {} : { concurrency: info.concurrency }),
    ...(info.priority === null ? {} : { priority: info.priority }),
    tasks: info.tasks.map((task) => ({
      id: task.id,
      dependsOn: task.dependsOn,
      trigger: task.trigger,
      retry: task.retry,
      ...(task.timeoutMs === null ? {} : { timeoutMs: task.timeoutMs }),
      ...(task.hasWhen ? { when: () => true } : {}),
      ...(task.delayMs == null ? {} : { delayMs: task.delayMs }),
      ...(task.rateLimit == null ? {} : { rateLimit: task.rateLimit }),
      // A wait task has no code anywhere; the others have theirs only in the runners that registered them.
      ...(task.waitFor == null
        ? {
            run: () => {
              throw new NonRetryableError(`Task "${task.id}" of workflow "${info.name}" has no code in this process.`);
            },
          }
        : { waitFor: task.waitFor }),
    })),
  });
  return Object.freeze({ ...built, version: info.version });
}
