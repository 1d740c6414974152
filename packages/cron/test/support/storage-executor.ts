import {
  type Clock,
  Context,
  type ExecuteOptions,
  ExecutionNotFoundError,
  IdempotencyConflictError,
  type Json,
  type ListExecutionsFilter,
  newId,
  type PipelineExecution,
  type PipelineExecutor,
  type PipelineResult,
  type PipelineRow,
  type PipelineStatus,
  type PipelineSummary,
  type Storage,
  sleep,
} from '@orreryjs/core';

const TERMINAL: readonly PipelineStatus[] = ['completed', 'failed', 'cancelled'];
const TASK_ID = 'only';

/**
 * A small PipelineExecutor that really writes pipelines (one task each) through
 * `storage.executions`, idempotent by key like DefaultRunner: the cron tests' stand-in for
 * the runner, on real storage. `failNext` makes the next calls throw (a failed handoff);
 * `completeAll` finishes every ready task, so pipelines end without a task loop.
 */
export class StorageExecutor implements PipelineExecutor {
  readonly #storage: Storage;
  readonly #clock: Clock;
  /** Errors the next executeAsync calls throw, in order. */
  readonly failNext: unknown[] = [];
  /** executeAsync calls made, including failed ones. */
  calls = 0;

  constructor(storage: Storage, clock: Clock) {
    this.#storage = storage;
    this.#clock = clock;
  }

  async executeAsync(
    workflowName: string,
    context?: Context | Record<string, Json>,
    options: ExecuteOptions = {},
  ): Promise<PipelineExecution> {
    this.calls += 1;
    if (this.failNext.length > 0) throw this.failNext.shift();
    const input = context instanceof Context ? context.toJSON() : (context ?? {});
    const { pipeline, created } = await this.#storage.executions.createPipeline({
      id: newId(),
      workflowName,
      workflowVersion: 'test-v1',
      input,
      idempotencyKey: options.idempotencyKey ?? null,
      scheduledTime: options.scheduledTime ?? null,
      scheduleId: options.scheduleId ?? null,
      now: this.#clock.now(),
      tasks: [{ id: newId(), taskId: TASK_ID, position: 0, pendingDeps: 0 }],
    });
    if (!created && pipeline.workflowName !== workflowName) {
      throw new IdempotencyConflictError(
        `Idempotency key "${options.idempotencyKey}" belongs to a "${pipeline.workflowName}" pipeline.`,
      );
    }
    return this.#handle(pipeline);
  }

  async execute(
    workflowName: string,
    context?: Context | Record<string, Json>,
    options?: ExecuteOptions,
  ): Promise<PipelineResult> {
    return (await this.executeAsync(workflowName, context, options)).wait();
  }

  async getExecutionStatus(executionId: string): Promise<PipelineStatus> {
    return (await this.#pipeline(executionId)).status;
  }

  async getExecutionResult(executionId: string): Promise<PipelineResult> {
    const pipeline = await this.#pipeline(executionId);
    const { runAt: _runAt, priority: _priority, waitingFor: _waitingFor, ...result } = summaryOf(pipeline);
    return { ...result, finalContext: pipeline.input, tasks: [] };
  }

  async cancelExecution(executionId: string): Promise<void> {
    await this.#storage.executions.cancelPipeline(executionId, this.#clock.now());
  }

  async pauseExecution(executionId: string, reason?: string): Promise<void> {
    await this.#storage.executions.pausePipeline(executionId, reason ?? null, this.#clock.now());
  }

  async resumeExecution(executionId: string): Promise<void> {
    await this.#storage.executions.resumePipeline(executionId, this.#clock.now());
  }

  async listExecutions(filter: ListExecutionsFilter = {}): Promise<PipelineSummary[]> {
    const rows = await this.#storage.executions.listPipelines({
      ...(filter.workflowName === undefined ? {} : { workflowName: filter.workflowName }),
      ...(filter.status === undefined ? {} : { status: filter.status }),
      limit: filter.limit ?? 1000,
      offset: filter.offset ?? 0,
    });
    return rows.map(summaryOf);
  }

  /** Completes every ready task of the given workflows; returns how many pipelines ended. */
  async completeAll(workflowNames: readonly string[]): Promise<number> {
    const registered = workflowNames.map((workflowName) => ({ workflowName, taskIds: [TASK_ID] }));
    const claimed = await this.#storage.executions.claimTasks({
      runnerId: 'test-executor',
      registered,
      limit: 10_000,
      leaseMs: 60_000,
      now: this.#clock.now(),
    });
    let ended = 0;
    for (const { task } of claimed) {
      const result = (
        await this.#storage.executions.finishTasks([
          {
            runnerId: 'test-executor',
            taskExecutionId: task.id,
            pipelineExecutionId: task.pipelineExecutionId,
            taskId: task.taskId,
            attempt: task.attempt,
            outcome: { status: 'completed', output: { set: {}, deleted: [] } },
            dependents: [],
            now: this.#clock.now(),
          },
        ])
      ).finished[0]!;
      if (result.finishedPipeline !== null) ended += 1;
    }
    return ended;
  }

  async #pipeline(id: string): Promise<PipelineRow> {
    const pipeline = await this.#storage.executions.getPipeline(id);
    if (pipeline === null) throw new ExecutionNotFoundError(`No pipeline execution has id "${id}".`);
    return pipeline;
  }

  #handle(pipeline: PipelineRow): PipelineExecution {
    return {
      id: pipeline.id,
      workflowName: pipeline.workflowName,
      status: () => this.getExecutionStatus(pipeline.id),
      cancel: () => this.cancelExecution(pipeline.id),
      wait: async () => {
        while (!TERMINAL.includes(await this.getExecutionStatus(pipeline.id))) await sleep(5);
        return this.getExecutionResult(pipeline.id);
      },
    };
  }
}

function summaryOf(pipeline: PipelineRow): PipelineSummary {
  return {
    executionId: pipeline.id,
    workflowName: pipeline.workflowName,
    workflowVersion: pipeline.workflowVersion,
    status: pipeline.status,
    createdAt: pipeline.createdAt,
    scheduleId: pipeline.scheduleId,
    scheduledTime: pipeline.scheduledTime,
    runAt: pipeline.runAt,
    priority: pipeline.priority,
    waitingFor: null,
    ...(pipeline.startedAt === null ? {} : { startedAt: pipeline.startedAt }),
    ...(pipeline.completedAt === null ? {} : { completedAt: pipeline.completedAt }),
    ...(pipeline.error === null ? {} : { error: pipeline.error }),
  };
}
