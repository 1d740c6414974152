import {
  assertNoNul,
  ConfigurationError,
  type Context,
  type ExecuteOptions,
  emitSafely,
  type Json,
  type ListExecutionsFilter,
  MAX_TIMER_MS,
  type PipelineExecution,
  type PipelineExecutor,
  type PipelineResult,
  type PipelineRow,
  type PipelineStatus,
  type PipelineSummary,
  PipelineTimeoutError,
  type Storage,
  systemClock,
  type TaskRow,
  ValidationError,
  type Workflow,
} from '@orreryjs/core';
import { CronService } from '@orreryjs/cron';
import type { Registry } from 'prom-client';
import { ActiveTasks } from './active-tasks.js';
import { ClaimLoop } from './claim-loop.js';
import { CompletionWaiters, FIRST_POLL_DELAY_MS } from './completion.js';
import { cronSettingsOf, type DefaultRunnerConfig, type ResolvedRunnerConfig, resolveConfig } from './config.js';
import { CronScheduling } from './cron-api.js';
import { cronHandoffOf } from './cron-handoff.js';
import { checkHealth, type RunnerHealth } from './health.js';
import { HeartbeatLoop, OffsetClock } from './heartbeat.js';
import { LeaseLoop } from './lease.js';
import { RunnerMetrics } from './metrics.js';
import { openStorage } from './open-storage.js';
import { PipelineWriter } from './pipeline-writer.js';
import { WorkflowRegistry } from './registry.js';
import { toPipelineResult, toPipelineSummary } from './result.js';
import { RetentionLoop } from './retention.js';
import { checkPipelineRequest, startPipeline } from './start-pipeline.js';
import type { AttemptEnvironment, EmitEvent } from './task-attempt.js';
import { checkExecutionId, checkListFilter, checkTimeoutMs, executionNotFound } from './validate.js';

/** How long `shutdown()` lets running tasks finish before aborting them, unless told otherwise. */
export const SHUTDOWN_TIMEOUT_MS = 30_000;

/** Options of {@link DefaultRunner.shutdown}. */
export interface ShutdownOptions {
  /**
   * How long running tasks may take to finish before their signals are aborted: a positive
   * integer of milliseconds, of any length (past setTimeout's 2³¹ ms too).
   * @default 30_000
   */
  timeoutMs?: number;
}

/**
 * The durable {@link PipelineExecutor}: runs registered workflows from the database, with
 * leases, retries and fencing, alone or beside other runners sharing the database.
 *
 * `executeAsync()` works at any time, before `start()` too: it only writes the pipeline.
 * Tasks run once some runner with the workflow registered is started, so `execute()` and
 * `wait()` on a runner that was never started wait for another runner to do the work (or
 * time out).
 */
export class DefaultRunner extends CronScheduling implements PipelineExecutor {
  readonly #config: ResolvedRunnerConfig;
  readonly #storage: Storage;
  readonly #registry: WorkflowRegistry;
  readonly #clock: OffsetClock;
  readonly #active = new ActiveTasks();
  readonly #waiters: CompletionWaiters;
  readonly #writer: PipelineWriter;
  readonly #claimLoop: ClaimLoop;
  readonly #leaseLoop: LeaseLoop;
  readonly #heartbeat: HeartbeatLoop;
  readonly #retention: RetentionLoop;
  readonly #cron: CronService;
  readonly #metrics: RunnerMetrics;
  readonly #emit: EmitEvent;
  #started: Promise<void> | undefined;
  #stopped: Promise<void> | undefined;

  private constructor(config: ResolvedRunnerConfig, storage: Storage, registry: WorkflowRegistry) {
    super();
    this.#config = config;
    this.#storage = storage;
    this.#registry = registry;
    const { logger, runnerId } = config;
    this.#clock = new OffsetClock(config.clock, config.clock === systemClock);
    this.#metrics = new RunnerMetrics(() => this.#active.size);
    this.#emit = (event, payload) => {
      this.#metrics.record(event, payload);
      emitSafely(this as never, logger, event, payload);
    };
    this.#writer = new PipelineWriter(storage.executions);
    this.#waiters = new CompletionWaiters({
      getPipeline: (id) => storage.executions.getPipeline(id),
      pollIntervalMs: config.pollIntervalMs,
      logger,
    });
    const environment: AttemptEnvironment = {
      store: storage.executions,
      registry,
      active: this.#active,
      runnerId,
      taskTimeoutMs: config.taskTimeoutMs,
      maxContextBytes: config.maxContextBytes,
      clock: this.#clock,
      logger,
      emit: this.#emit,
      pipelineFinished: (row, tasks) => this.#pipelineFinished(row, tasks),
      wake: (atMs) => (atMs === undefined ? this.#claimLoop.nudge() : this.#claimLoop.nudgeAt(atMs)),
      slotFreed: () => this.#claimLoop.slotFreed(),
    };
    const shared = { store: storage.executions, active: this.#active, runnerId, clock: this.#clock, logger };
    this.#claimLoop = new ClaimLoop({
      ...shared,
      registry,
      environment,
      maxConcurrentTasks: config.maxConcurrentTasks,
      taskLeaseMs: config.taskLeaseMs,
      pollIntervalMs: config.pollIntervalMs,
    });
    this.#leaseLoop = new LeaseLoop({ ...shared, taskLeaseMs: config.taskLeaseMs });
    this.#heartbeat = new HeartbeatLoop({
      runners: storage.runners,
      runnerId,
      clock: this.#clock,
      workflows: () => registry.names(),
      logger,
    });
    this.#retention = new RetentionLoop({ storage, ...config.retention, clock: this.#clock, logger });
    this.#cron = new CronService({
      store: storage.cron,
      executor: this,
      clock: this.#clock,
      logger,
      runnerId,
      settings: cronSettingsOf(config),
      workflows: registry,
      emit: (event, ...args) => this.#emit(event, args[0]),
      inTransactionHandoff: cronHandoffOf({
        registry,
        maxContextBytes: config.maxContextBytes,
        logger,
        created: (pipeline) => this.#pipelineCreated(pipeline),
      }),
    });
  }

  /**
   * Opens (and by default migrates) the database, measures this host's clock offset from the
   * database's (so that schedule management, triggers, backfills and `executeAsync` use
   * database time before `start()` too; the heartbeat re-measures it after `start()`), and
   * registers `config.workflows`.
   * @throws ConfigurationError for an invalid option, a duplicate workflow name, a database
   *   that cannot be opened, or (with `migrate: false`) a schema older than the code.
   * @throws DatabaseError when a migration or the clock measurement fails.
   */
  static async create(config: DefaultRunnerConfig = {}): Promise<DefaultRunner> {
    const resolved = resolveConfig(config);
    const registry = new WorkflowRegistry();
    for (const workflow of resolved.workflows) registry.add(workflow);
    const storage = await openStorage(resolved);
    const runner = new DefaultRunner(resolved, storage, registry);
    try {
      await runner.#clock.measure(storage.runners);
    } catch (error) {
      await storage.close().catch(() => undefined);
      throw error;
    }
    return runner;
  }

  /** This runner's id in the `runners` table and in task leases. */
  get runnerId(): string {
    return this.#config.runnerId;
  }

  /**
   * Registers a workflow, so that this runner accepts and runs its pipelines. Chainable;
   * allowed after `start()` too.
   * @throws ConfigurationError when another workflow of that name is registered.
   */
  register(workflow: Workflow): this {
    this.assertOpen();
    this.#registry.add(workflow);
    this.#claimLoop.nudge();
    return this;
  }

  /**
   * Starts the loops: heartbeat (after measuring the clock offset), lease renewal, task
   * claiming and retention. Idempotent.
   * @throws ConfigurationError after `shutdown()`.
   */
  start(): Promise<void> {
    if (this.#stopped !== undefined) return Promise.reject(shutDownError());
    this.#started ??= this.#start();
    return this.#started;
  }

  async #start(): Promise<void> {
    await this.#heartbeat.beat();
    this.#heartbeat.start();
    this.#leaseLoop.start();
    this.#claimLoop.start();
    this.#retention.start();
    this.#cron.start();
  }

  /**
   * Stops claiming, lets running tasks finish for up to `timeoutMs`, aborts the rest and
   * gives their leases back (not counted as failures), marks this runner stopped and closes
   * the database. Every step runs even if one fails; the first failure is rethrown at the
   * end. Idempotent. Calls still waiting in `execute()` or `wait()` reject with
   * PipelineTimeoutError; their pipelines stay durable and resume on the next runner.
   */
  shutdown(options: ShutdownOptions = {}): Promise<void> {
    this.#stopped ??= this.#shutdown(checkTimeoutMs(options.timeoutMs, SHUTDOWN_TIMEOUT_MS, 'shutdown timeoutMs'));
    return this.#stopped;
  }

  async #shutdown(timeoutMs: number): Promise<void> {
    const failures: unknown[] = [];
    const step = async (name: string, work: () => Promise<unknown>) => {
      try {
        await work();
      } catch (error) {
        failures.push(error);
        this.#config.logger.error({ err: error, step: name }, 'shutdown step failed');
      }
    };
    await this.#started?.catch(() => undefined);
    await step('stop cron', () => this.#cron.stop());
    await step('stop claiming', () => this.#claimLoop.stop());
    await step('drain running tasks', async () => {
      if (await this.#whenIdle(timeoutMs)) return;
      const leases = this.#active.leases();
      this.#active.abortAll('shutdown');
      await this.#active.settled();
      const released = await this.#storage.executions.releaseLeases(this.#config.runnerId, leases, this.#clock.now());
      this.#config.logger.info({ released }, 'released the leases of unfinished tasks');
    });
    await step('stop loops', () =>
      Promise.all([this.#leaseLoop.stop(), this.#heartbeat.stop(), this.#retention.stop()]),
    );
    this.#waiters.close(
      new PipelineTimeoutError(
        'The runner shut down before the pipeline finished; its state is durable and another runner (or a restart) resumes it. Wait on it from a running runner.',
      ),
    );
    if (this.#heartbeat.beaten) {
      await step('mark stopped', () => this.#storage.runners.markStopped(this.#config.runnerId, this.#clock.now()));
    }
    await step('close database', () => this.#storage.close());
    if (failures.length > 0) throw failures[0];
  }

  /** {@link ActiveTasks.whenIdle} for a wait of any length: one timer holds at most MAX_TIMER_MS. */
  async #whenIdle(timeoutMs: number): Promise<boolean> {
    const endsAtMs = performance.now() + timeoutMs;
    for (;;) {
      const leftMs = endsAtMs - performance.now();
      if (leftMs <= MAX_TIMER_MS) return this.#active.whenIdle(Math.max(0, leftMs));
      if (await this.#active.whenIdle(MAX_TIMER_MS)) return true;
    }
  }

  /**
   * Commits a pipeline and all its task rows, then returns a handle without waiting. With an
   * `idempotencyKey` already used, returns that execution and writes nothing. Works before
   * `start()`: the tasks run when some runner with this workflow is started.
   * @throws WorkflowNotFoundError when the workflow is not registered (nothing is written).
   * @throws ContextError when the context is not plain JSON or exceeds `maxContextBytes`.
   * @throws IdempotencyConflictError when the key belongs to an execution of another workflow.
   * @throws DatabaseError when the write fails.
   */
  async executeAsync(
    workflowName: string,
    context?: Context | Record<string, Json>,
    options: ExecuteOptions = {},
  ): Promise<PipelineExecution> {
    this.assertOpen();
    const workflow = this.#registry.get(workflowName);
    const request = checkPipelineRequest(workflow, context, options, this.#config.maxContextBytes);
    const defaultTimeoutMs = checkTimeoutMs(options.timeoutMs, this.#config.pipelineTimeoutMs, 'timeoutMs');
    const { pipeline, created } = await startPipeline({ writer: this.#writer, now: () => this.#clock.now() }, request);
    if (created) this.#pipelineCreated(pipeline);
    return this.#handle(pipeline, defaultTimeoutMs);
  }

  /**
   * Runs a pipeline and resolves with its result whatever its outcome (failed and cancelled
   * included). Some runner with the workflow must be started for it to finish.
   * @throws WorkflowNotFoundError, ContextError, IdempotencyConflictError as executeAsync.
   * @throws PipelineTimeoutError when it is not terminal within `timeoutMs` (default pipelineTimeoutMs).
   */
  async execute(
    workflowName: string,
    context?: Context | Record<string, Json>,
    options: ExecuteOptions = {},
  ): Promise<PipelineResult> {
    const execution = await this.executeAsync(workflowName, context, options);
    return execution.wait();
  }

  /**
   * The current status of an execution.
   * @throws ExecutionNotFoundError for an unknown id.
   */
  async getExecutionStatus(executionId: string): Promise<PipelineStatus> {
    return (await this.#pipeline(executionId)).status;
  }

  /**
   * Everything known about an execution now (it need not be finished): status, timings,
   * the context so far and every task.
   * @throws ExecutionNotFoundError for an unknown id.
   */
  async getExecutionResult(executionId: string): Promise<PipelineResult> {
    const row = await this.#pipeline(executionId);
    return toPipelineResult(row, await this.#storage.executions.listTasks(row.id));
  }

  /**
   * Cancels an execution that is not terminal: its tasks that have not finished become
   * `cancelled`, and those running here have their signals aborted (a running task on
   * another runner is aborted when its lease renewal fails). A no-op on a terminal one.
   * @throws ExecutionNotFoundError for an unknown id.
   */
  async cancelExecution(executionId: string): Promise<void> {
    const before = await this.#pipeline(executionId);
    if (isTerminal(before.status)) return;
    const row = await this.#storage.executions.cancelPipeline(before.id, this.#clock.now());
    if (row === null) throw executionNotFound(executionId);
    this.#active.abortPipeline(row.id, 'cancelled');
    if (row.status === 'cancelled') {
      this.#waiters.notify(row);
      this.#emit('pipeline:cancelled', { executionId: row.id, workflowName: row.workflowName });
    }
  }

  /**
   * Pauses a pending or running execution: nothing more is claimed, and its running tasks
   * go back to `ready` (their signals are aborted; not counted as failures). A no-op on a
   * paused or terminal one.
   * @throws ExecutionNotFoundError for an unknown id.
   * @throws ValidationError when `reason` is not a string, or holds a NUL character.
   */
  async pauseExecution(executionId: string, reason?: string): Promise<void> {
    if (reason !== undefined && typeof reason !== 'string') {
      throw new ValidationError(`A pause reason must be a string, got ${typeof reason}.`);
    }
    if (reason !== undefined) assertNoNul(reason, `The pause reason ${JSON.stringify(reason)}`);
    const id = checkExecutionId(executionId);
    const row = await this.#storage.executions.pausePipeline(id, reason ?? null, this.#clock.now());
    if (row === null) throw executionNotFound(executionId);
    if (row.status === 'paused') this.#active.abortPipeline(row.id, 'paused');
  }

  /**
   * Resumes a paused execution; its ready tasks are claimed again. A no-op on one that is not paused.
   * @throws ExecutionNotFoundError for an unknown id.
   */
  async resumeExecution(executionId: string): Promise<void> {
    const id = checkExecutionId(executionId);
    const row = await this.#storage.executions.resumePipeline(id, this.#clock.now());
    if (row === null) throw executionNotFound(executionId);
    this.#claimLoop.nudge();
  }

  /**
   * Executions, newest first, optionally of one workflow or status.
   * @throws ValidationError for a bad status, limit (1–1000, default 100) or offset.
   */
  async listExecutions(filter: ListExecutionsFilter = {}): Promise<PipelineSummary[]> {
    const rows = await this.#storage.executions.listPipelines(checkListFilter(filter));
    return rows.map(toPipelineSummary);
  }

  /**
   * Whether this runner's loops run, when the cron tick and recovery last ran, and how many
   * occurrences are lost and tasks stalled in the database right now (any runner's): the
   * data behind a readiness probe. Two cheap indexed counts.
   * @throws DatabaseError when the database cannot be read.
   */
  async health(): Promise<RunnerHealth> {
    this.assertOpen();
    return checkHealth({
      runnerId: this.#config.runnerId,
      running: this.#started !== undefined && this.#stopped === undefined,
      taskLoopRunning: this.#claimLoop.running,
      runningTasks: this.#active.size,
      cron: this.#cron.health(),
      cronStore: this.#storage.cron,
      executionStore: this.#storage.executions,
      lostThresholdMs: this.#config.cronLostThresholdMs,
      clock: this.#clock,
    });
  }

  /**
   * This runner's Prometheus metrics in the text exposition format: cron fires, fire lag,
   * skips, recovery outcomes, task outcomes and durations, finished pipelines, running tasks.
   * Serve it at `/metrics` (`orrery worker --metrics-port` does), or merge
   * {@link metricsRegistry} into your own prom-client registry.
   */
  metrics(): Promise<string> {
    return this.#metrics.registry.metrics();
  }

  /** The prom-client registry behind {@link metrics}; it belongs to this runner alone. */
  get metricsRegistry(): Registry {
    return this.#metrics.registry;
  }

  protected override cronService(): CronService {
    return this.#cron;
  }

  #handle(pipeline: PipelineRow, defaultTimeoutMs: number): PipelineExecution {
    const { id, workflowName } = pipeline;
    return {
      id,
      workflowName,
      wait: (options = {}) =>
        this.#waitForResult(id, workflowName, checkTimeoutMs(options.timeoutMs, defaultTimeoutMs, 'timeoutMs')),
      status: () => this.getExecutionStatus(id),
      cancel: () => this.cancelExecution(id),
    };
  }

  async #waitForResult(id: string, workflowName: string, timeoutMs: number): Promise<PipelineResult> {
    // This runner will most likely finish the pipeline itself and be notified: no need to read it early.
    const runsItHere = this.#claimLoop.running && this.#registry.has(workflowName);
    const firstPollDelayMs = runsItHere ? this.#config.pollIntervalMs : FIRST_POLL_DELAY_MS;
    const { row, tasks } = await this.#waiters.wait(id, timeoutMs, firstPollDelayMs);
    return toPipelineResult(row, tasks ?? (await this.#storage.executions.listTasks(id)));
  }

  async #pipeline(executionId: string): Promise<PipelineRow> {
    const row = await this.#storage.executions.getPipeline(checkExecutionId(executionId));
    if (row === null) throw executionNotFound(executionId);
    return row;
  }

  #pipelineCreated(pipeline: Pick<PipelineRow, 'id' | 'workflowName' | 'idempotencyKey' | 'scheduledTime'>): void {
    this.#emit('pipeline:created', {
      executionId: pipeline.id,
      workflowName: pipeline.workflowName,
      idempotencyKey: pipeline.idempotencyKey,
      scheduledTime: pipeline.scheduledTime,
    });
    this.#claimLoop.nudge();
  }

  #pipelineFinished(row: PipelineRow, tasks: readonly TaskRow[] | null): void {
    this.#waiters.notify(row, tasks);
    const startMs = (row.startedAt ?? row.createdAt).getTime();
    const payload = {
      executionId: row.id,
      workflowName: row.workflowName,
      status: row.status,
      durationMs: (row.completedAt?.getTime() ?? startMs) - startMs,
      error: row.error,
    };
    this.#emit(row.status === 'failed' ? 'pipeline:failed' : 'pipeline:completed', payload);
  }

  protected override assertOpen(): void {
    if (this.#stopped !== undefined) throw shutDownError();
  }
}

function shutDownError(): ConfigurationError {
  return new ConfigurationError('This runner was shut down; create a new one with DefaultRunner.create().');
}

function isTerminal(status: PipelineStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}
