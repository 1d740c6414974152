import {
  ConfigurationError,
  type RegisteredTasks,
  type Workflow,
  type WorkflowDefinitionRow,
  WorkflowNotFoundError,
  workflowDefinitionRow,
} from '@orreryjs/core';

/**
 * The workflows this process can run, by name. What is registered is also what the runner
 * claims: it never takes a task of a workflow (or a task id) it does not know.
 */
export class WorkflowRegistry {
  readonly #byName = new Map<string, Workflow>();
  #registered: RegisteredTasks[] | undefined;
  #definitions: WorkflowDefinitionRow[] | undefined;

  /**
   * Adds a workflow. Registering the same object again is a no-op.
   * @throws ConfigurationError when another workflow of that name is already registered.
   */
  add(workflow: Workflow): void {
    if (typeof workflow?.name !== 'string' || !(workflow.taskById instanceof Map)) {
      throw new ConfigurationError('register() takes a workflow built with defineWorkflow().');
    }
    const existing = this.#byName.get(workflow.name);
    if (existing === workflow) return;
    if (existing !== undefined) {
      throw new ConfigurationError(
        `A workflow named "${workflow.name}" is already registered; give each workflow a unique name.`,
      );
    }
    this.#byName.set(workflow.name, workflow);
    this.#registered = undefined;
    this.#definitions = undefined;
  }

  /**
   * The workflow registered under `name`.
   * @throws WorkflowNotFoundError naming the registered workflows.
   */
  get(name: string): Workflow {
    const workflow = this.#byName.get(name);
    if (workflow === undefined) {
      const known = this.names();
      const hint = known.length === 0 ? 'none is registered' : `registered: ${known.join(', ')}`;
      throw new WorkflowNotFoundError(
        `Workflow "${name}" is not registered with this runner (${hint}); pass it to register() or config.workflows.`,
      );
    }
    return workflow;
  }

  /** The workflow registered under `name`, or undefined. */
  find(name: string): Workflow | undefined {
    return this.#byName.get(name);
  }

  /** True when a workflow of that name is registered. */
  has(name: string): boolean {
    return this.#byName.has(name);
  }

  /** Names of the registered workflows, in registration order. */
  names(): string[] {
    return [...this.#byName.keys()];
  }

  /** The (workflow, task ids) pairs to claim, rebuilt only after a registration. */
  registeredTasks(): readonly RegisteredTasks[] {
    this.#registered ??= [...this.#byName.values()].map((w) => ({
      workflowName: w.name,
      taskIds: w.tasks.map((t) => t.id),
    }));
    return this.#registered;
  }

  /** The stored definitions of the registered workflows (rows of the `workflows` table), rebuilt only after a registration. */
  definitions(): readonly WorkflowDefinitionRow[] {
    this.#definitions ??= [...this.#byName.values()].map(workflowDefinitionRow);
    return this.#definitions;
  }
}
