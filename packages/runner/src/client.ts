import type { Span } from '@opentelemetry/api';
import {
  assertNoNul,
  ConfigurationError,
  type Context,
  type ExecuteOptions,
  emitSafely,
  IdempotencyConflictError,
  isTerminalPipelineStatus,
  type Json,
  type ListExecutionsFilter,
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
  type WakeUp,
  type Workflow,
  type WorkflowInfo,
  WorkflowNotFoundError,
} from '@orreryjs/core';
import { assertKnownKeys, CronService } from '@orreryjs/cron';
import { EventEmitter } from 'eventemitter3';
import { type OrreryClientConfig, resolveClientConfig } from './client-config.js';
import { CompletionWaiters, FIRST_POLL_DELAY_MS } from './completion.js';
import { cronSettingsOf, type ResolvedRunnerConfig } from './config.js';
import { SCHEDULE_CALLS, ScheduleCalls } from './cron-api.js';
import { cronHandoffOf } from './cron-handoff.js';
import type { EmitEvent, RunnerEvents } from './events.js';
import { OffsetClock } from './heartbeat.js';
import { KnownWorkflows } from './known-workflows.js';
import { openStorage } from './open-storage.js';
import { passCallsThrough } from './pass-through.js';
import { PipelineWriter } from './pipeline-writer.js';
import { WorkflowRegistry } from './registry.js';
import { toPipelineResult, toPipelineSummary } from './result.js';
import { assertRetryable, planRetry } from './retry-execution.js';
import { type ListRunnersOptions, type RunnerInfo, toRunnerInfos } from './runner-info.js';
import { checkPipelineRequest, newPipelineRows, type PipelineRequest, startPipeline } from './start-pipeline.js';
import { inProducerSpan, SPAN_ATTRIBUTES, scheduleAttributes, traceContextOf } from './tracing.js';
import { checkExecutionId, checkListFilter, checkTimeoutMs, executionIdPrefix, executionNotFound } from './validate.js';
import type { PipelineStopCause } from './worker/active-tasks.js';

/**
 * The tasks a runner runs in this process, as its client's calls see them: the client tells
 * it what its calls changed. A client without a runner has no local work.
 */
export interface LocalWork {
  /** Tasks may be claimable now (a pipeline was created, resumed or retried here). */
  workReady(): void;
  /** A call here paused or cancelled a pipeline: stop its attempts running here. */
  stopPipeline(executionId: string, cause: PipelineStopCause): void;
  /**
   * First pause before a waiter reads a pipeline of `workflowName`, when this process will most
   * likely finish it itself and be told; undefined to let the client choose.
   */
  firstPollDelayMs(workflowName: string): number | undefined;
}

/** What a client is built from; a DefaultRunner passes its own registry, clock, events and local work. @internal */
export interface ClientParts {
  config: ResolvedRunnerConfig;
  storage: Storage;
  registry: WorkflowRegistry;
  clock: OffsetClock;
  /** Where the client's events go. @default the client itself */
  emit?: EmitEvent;
  /** The runner's tasks. @default none */
  localWork?: LocalWork;
}

const NO_LOCAL_WORK: LocalWork = {
  workReady: () => {},
  stopPipeline: () => {},
  firstPollDelayMs: () => undefined,
};

/** One pipeline to start with {@link OrreryClient.executeAsyncMany}: the arguments of executeAsync. */
export interface ExecuteRequest {
  workflowName: string;
  context?: Context | Record<string, Json>;
  options?: ExecuteOptions;
}

/** Every key of an {@link ExecuteRequest}: any other is refused, naming the nearest. */
const EXECUTE_REQUEST_KEYS = Object.keys({
  workflowName: true,
  context: true,
  options: true,
} satisfies Record<keyof ExecuteRequest, true>);

/** A value as named in an error message. */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/** The schedule calls a client offers as its own (see {@link ScheduleCalls}). */
type ScheduleCallsOf = Pick<ScheduleCalls, (typeof SCHEDULE_CALLS)[number]>;

export interface OrreryClient extends ScheduleCallsOf {}

/**
 * A handle on an Orrery database for a process that starts, inspects and manages work but
 * runs no task code: a web server, an admin script, the CLI, a dashboard. It starts any
 * workflow that some runner has registered (the latest registered version of the name, from
 * the `workflows` table), waits for pipelines that runners elsewhere execute, and manages
 * cron schedules. A `DefaultRunner` holds one and offers its calls: a runner is a client plus
 * a worker that runs tasks.
 *
 * Its events are those of the calls made through it (`pipeline:created`, `pipeline:cancelled`).
 * Waiting (`execute()`, `wait()`) wakes at once when the storage reports that another process
 * finished the pipeline (PostgreSQL with `listen`; the database is then read at the start of
 * the wait and every `pollIntervalMs` as a fallback); without wake-ups it polls with a
 * back-off up to `pollIntervalMs`.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the schedule calls declared by the interface above are given to the prototype in the static block (passCallsThrough), so each exists.
export class OrreryClient extends EventEmitter<RunnerEvents> implements PipelineExecutor {
  static {
    passCallsThrough(OrreryClient, (client) => client.#schedules, SCHEDULE_CALLS);
  }

  readonly #config: ResolvedRunnerConfig;
  readonly #storage: Storage;
  readonly #registry: WorkflowRegistry;
  readonly #clock: OffsetClock;
  readonly #known: KnownWorkflows;
  readonly #waiters: CompletionWaiters;
  readonly #schedules: ScheduleCalls;
  readonly #localWork: LocalWork;
  readonly #emit: EmitEvent;
  readonly #writer: PipelineWriter;
  readonly #unsubscribe: () => void;
  /**
   * The cron engine behind the schedule calls; a runner starts its loops. @internal
   */
  readonly scheduler: CronService;
  #closed: Promise<void> | undefined;

  /** @internal Use {@link OrreryClient.create} (or `DefaultRunner.create`). */
  constructor(parts: ClientParts) {
    super();
    const { config, storage, registry, clock } = parts;
    const { logger } = config;
    this.#config = config;
    this.#storage = storage;
    this.#registry = registry;
    this.#clock = clock;
    this.#localWork = parts.localWork ?? NO_LOCAL_WORK;
    this.#emit = parts.emit ?? ((event, payload) => emitSafely(this as never, logger, event, payload));
    this.#known = new KnownWorkflows(registry, storage.workflows);
    this.#writer = new PipelineWriter(storage.executions);
    this.#waiters = new CompletionWaiters({
      getPipeline: (id) => storage.executions.getPipeline(id),
      pollIntervalMs: config.pollIntervalMs,
      logger,
    });
    this.scheduler = new CronService({
      store: storage.cron,
      executor: this,
      clock,
      logger,
      runnerId: config.runnerId,
      settings: cronSettingsOf(config),
      workflows: this.#known,
      emit: (event, ...args) => this.#emit(event, args[0]),
      inTransactionHandoff: cronHandoffOf({
        registry,
        maxContextBytes: config.maxContextBytes,
        logger,
        runnerId: config.runnerId,
        created: (pipeline) => this.#pipelineCreated(pipeline),
        cancelled: (ids) => this.#cancelledByCron(ids),
      }),
    });
    this.#schedules = new ScheduleCalls({
      cron: this.scheduler,
      assertOpen: () => this.#assertOpen(),
      checkWorkflowName: (name) => this.#known.assertKnown(name),
      refreshWorkflows: async () => {
        await this.#known.refresh();
      },
      ledgerRetentionMs: config.retention.cronLedgerMs,
      clock,
    });
    this.#unsubscribe = storage.wakeUps?.subscribe((wakeUp) => this.#wakeWaiters(wakeUp)) ?? (() => {});
  }

  /**
   * Opens (and by default migrates) the database. The client runs no loops: it only answers calls.
   * @throws ConfigurationError for an invalid or runner-only option, a database that cannot
   *   be opened, or (with `migrate: false`) a schema older than the code.
   * @throws DatabaseError when a migration fails.
   */
  static async create(config: OrreryClientConfig = {}): Promise<OrreryClient> {
    const resolved = resolveClientConfig(config);
    const storage = await openStorage(resolved, { mustExist: config.mustExist });
    // Measured once: the client compares heartbeats (listRunners) with the database's clock.
    const clock = new OffsetClock(resolved.clock, resolved.clock === systemClock);
    try {
      await clock.measure(storage.runners);
    } catch (error) {
      await storage.close().catch(() => undefined);
      throw error;
    }
    return new OrreryClient({ config: resolved, storage, registry: new WorkflowRegistry(), clock });
  }

  /**
   * Commits a pipeline and all its task rows, then returns a handle without waiting. A
   * workflow this process registered starts as registered; any other name starts the latest
   * version a runner stored in the `workflows` table. With an `idempotencyKey` already used,
   * returns that execution and writes nothing.
   * @throws WorkflowNotFoundError naming the known workflows, when no runner registered it (nothing is written).
   * @throws ContextError when the context is not plain JSON or exceeds `maxContextBytes`.
   * @throws ValidationError for a bad option, or a key ExecuteOptions does not have (naming
   *   the nearest valid one); nothing is written.
   * @throws IdempotencyConflictError when the key belongs to an execution of another workflow.
   * @throws DatabaseError when the write fails.
   */
  async executeAsync(
    workflowName: string,
    context?: Context | Record<string, Json>,
    options: ExecuteOptions = {},
  ): Promise<PipelineExecution> {
    this.#assertOpen();
    // The cron scheduler's handoffs (two-phase, recovery, triggers, backfills) are the calls that pass a scheduleId.
    const handoff = (options as ExecuteOptions | null)?.scheduleId !== undefined;
    const attributes = handoff ? { [SPAN_ATTRIBUTES.runnerId]: this.#config.runnerId } : {};
    return inProducerSpan(handoff ? 'orrery.cron.handoff' : 'orrery.execute', attributes, async (span) => {
      const workflow = await this.#known.resolve(workflowName);
      const request = checkPipelineRequest(workflow, context, options, this.#config.maxContextBytes);
      span.setAttribute(SPAN_ATTRIBUTES.workflow, workflow.name);
      span.setAttributes(scheduleAttributes(request.scheduleId, request.scheduledTime));
      const defaultTimeoutMs = checkTimeoutMs(options.timeoutMs, this.#config.pipelineTimeoutMs, 'timeoutMs');
      const { pipeline, created } = await startPipeline(
        { writer: this.#writer, now: () => this.#clock.now() },
        request,
        traceContextOf(span),
      );
      span.setAttribute(SPAN_ATTRIBUTES.executionId, pipeline.id);
      if (created) this.#pipelineCreated(pipeline);
      return this.#handle(pipeline, defaultTimeoutMs);
    });
  }

  /**
   * Starts many pipelines in one transaction, all or nothing, and returns their handles in
   * request order without waiting. Every request is checked before anything is written, so
   * bad input anywhere (an unknown workflow, a bad context or option, one idempotency key
   * given for two different workflows) refuses the whole batch. Idempotency keys work as in
   * {@link executeAsync}: a key already used, or used by an earlier request of the same
   * batch, returns that execution and writes nothing for it.
   * @throws ValidationError when `requests` is not an array of `{ workflowName, context?, options? }`
   *   (an unknown key of a request or of its options included, naming the nearest valid one).
   * @throws WorkflowNotFoundError, ContextError, IdempotencyConflictError as executeAsync (nothing is written).
   * @throws DatabaseError when the write fails (nothing is written).
   */
  async executeAsyncMany(requests: readonly ExecuteRequest[]): Promise<PipelineExecution[]> {
    this.#assertOpen();
    // One orrery.execute span per call, not per pipeline: the batch is one transaction, and its
    // pipelines' tasks all continue this span's trace. orrery.workflow is set when all share one.
    return inProducerSpan('orrery.execute', {}, (span) => this.#executeMany(requests, span));
  }

  async #executeMany(requests: readonly ExecuteRequest[], span: Span): Promise<PipelineExecution[]> {
    if (!Array.isArray(requests)) {
      throw new ValidationError(
        `executeAsyncMany takes an array of { workflowName, context?, options? }, got ${describeValue(requests)}.`,
      );
    }
    const workflows = new Map<string, Promise<Workflow>>();
    const checked: Array<{ request: PipelineRequest; timeoutMs: number }> = [];
    const keyOwners = new Map<string, string>();
    for (const [index, entry] of requests.entries()) {
      if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
        throw new ValidationError(
          `executeAsyncMany: request ${index} must be an object { workflowName, context?, options? }, got ${describeValue(entry)}.`,
        );
      }
      assertKnownKeys(entry, EXECUTE_REQUEST_KEYS, `executeAsyncMany request ${index} key`, 'keys');
      const { workflowName, context, options = {} } = entry;
      const name = String(workflowName);
      let workflow = workflows.get(name);
      if (workflow === undefined || typeof workflowName !== 'string') {
        workflow = this.#known.resolve(workflowName);
        workflows.set(name, workflow);
      }
      const request = checkPipelineRequest(await workflow, context, options, this.#config.maxContextBytes);
      const timeoutMs = checkTimeoutMs(options.timeoutMs, this.#config.pipelineTimeoutMs, 'timeoutMs');
      if (request.idempotencyKey !== null) {
        const owner = keyOwners.get(request.idempotencyKey);
        if (owner !== undefined && owner !== request.workflow.name) {
          throw new IdempotencyConflictError(
            `executeAsyncMany: idempotency key "${request.idempotencyKey}" is given for workflow "${owner}" and, in request ${index}, for "${request.workflow.name}"; use a key unique to each request.`,
          );
        }
        keyOwners.set(request.idempotencyKey, request.workflow.name);
      }
      checked.push({ request, timeoutMs });
    }
    if (checked.length === 0) return [];
    const names = new Set(checked.map(({ request }) => request.workflow.name));
    if (names.size === 1) span.setAttribute(SPAN_ATTRIBUTES.workflow, [...names][0]!);
    const now = this.#clock.now();
    const traceContext = traceContextOf(span);
    // All or nothing: a key another workflow's execution holds rolls the whole batch back.
    const results = await this.#storage.executions.createPipelines(
      checked.map(({ request }) => newPipelineRows(request, now, traceContext)),
      { allOrNothing: true },
    );
    for (const { pipeline, created } of results) if (created) this.#pipelineCreated(pipeline);
    return results.map(({ pipeline }, index) => {
      const { timeoutMs } = checked[index]!;
      return this.#handle(pipeline, timeoutMs);
    });
  }

  /**
   * Runs a pipeline and resolves with its result whatever its outcome (failed and cancelled
   * included). Some runner with the workflow must be started for it to finish.
   * @throws WorkflowNotFoundError, ContextError, ValidationError, IdempotencyConflictError as executeAsync.
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
   * `cancelled`, and those running in this process have their signals aborted (a running
   * task on another runner is aborted when its lease renewal fails). A no-op on a terminal one.
   * @throws ExecutionNotFoundError for an unknown id.
   */
  async cancelExecution(executionId: string): Promise<void> {
    const before = await this.#pipeline(executionId);
    if (isTerminalPipelineStatus(before.status)) return;
    const row = await this.#storage.executions.cancelPipeline(before.id, this.#clock.now());
    if (row === null) throw executionNotFound(executionId);
    this.#cancelled(row);
  }

  /** What follows a cancel committed by this process: its local tasks aborted, waiters and listeners told. */
  #cancelled(row: PipelineRow): void {
    this.#localWork.stopPipeline(row.id, 'cancelled');
    if (row.status === 'cancelled') {
      this.#waiters.notify(row);
      this.#emit('pipeline:cancelled', { executionId: row.id, workflowName: row.workflowName });
    }
  }

  /** The cron claim transaction cancelled these pipelines (`cancel_other`): as if cancelExecution had. */
  async #cancelledByCron(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      const row = await this.#storage.executions.getPipeline(id);
      if (row !== null) this.#cancelled(row);
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
    if (row.status === 'paused') this.#localWork.stopPipeline(row.id, 'paused');
  }

  /**
   * Resumes a paused execution; its ready tasks are claimed again. A no-op on one that is not paused.
   * @throws ExecutionNotFoundError for an unknown id.
   */
  async resumeExecution(executionId: string): Promise<void> {
    const id = checkExecutionId(executionId);
    const row = await this.#storage.executions.resumePipeline(id, this.#clock.now());
    if (row === null) throw executionNotFound(executionId);
    this.#localWork.workReady();
  }

  /**
   * The whole id of the one execution whose id starts with `idOrPrefix`: a UUID, or at least
   * 8 of its leading hex digits (dashes where the UUID has them, or none), as the dashboard
   * and `orrery executions list` show ids shortened. For tools (the CLI) that take ids from
   * people.
   * @internal Not part of DESIGN.md's contract; may change.
   * @throws ExecutionNotFoundError when no execution's id starts so, or `idOrPrefix` is no
   * such prefix.
   * @throws ValidationError when several do, listing a few of them.
   */
  async resolveExecutionId(idOrPrefix: string): Promise<string> {
    this.#assertOpen();
    const hexPrefix = typeof idOrPrefix === 'string' ? executionIdPrefix(idOrPrefix) : undefined;
    if (hexPrefix === undefined) throw executionNotFound(idOrPrefix);
    const shown = 5;
    const ids = await this.#storage.executions.listPipelineIdsByPrefix(hexPrefix, shown + 1);
    if (ids.length === 0) throw executionNotFound(idOrPrefix);
    if (ids.length > 1) {
      const listed = ids.length > shown ? `${ids.slice(0, shown).join(', ')}, …` : ids.join(', ');
      throw new ValidationError(
        `Execution id prefix ${JSON.stringify(idOrPrefix)} matches ${ids.length > shown ? `more than ${shown}` : ids.length} executions (${listed}); give more of its characters.`,
      );
    }
    return ids[0]!;
  }

  /**
   * Runs a `failed` or `cancelled` execution again from where it failed: its failed and
   * cancelled tasks, and those skipped downstream of them, go back to run with their attempt
   * counters kept; completed tasks keep their outputs. The execution keeps its id, so a cron
   * ledger row stays linked to it and a failed slot re-runs with its `scheduled_time`.
   * Emits `pipeline:retried`.
   * @throws ExecutionNotFoundError for an unknown id.
   * @throws ValidationError when the execution is in any other status.
   * @throws WorkflowNotFoundError when no runner stored the workflow version it ran.
   */
  async retryExecution(executionId: string): Promise<PipelineExecution> {
    this.#assertOpen();
    const before = await this.#pipeline(executionId);
    assertRetryable(before);
    const dependsOn = await this.#dependencies(before);
    const tasks = await this.#storage.executions.listTasks(before.id);
    const plan = planRetry(tasks, (taskId) => dependsOn.get(taskId) ?? []);
    const row = await this.#storage.executions.retryPipeline(before.id, plan.tasks, this.#clock.now());
    if (row === null) throw executionNotFound(executionId);
    // Another call retried it (or cancelled the retry) in between: judge the status it has now.
    if (row.status !== 'running') assertRetryable(row);
    this.#emit('pipeline:retried', {
      executionId: row.id,
      workflowName: row.workflowName,
      previousStatus: before.status,
      retriedTasks: plan.taskIds,
    });
    this.#localWork.workReady();
    return this.#handle(row, this.#config.pipelineTimeoutMs);
  }

  /** The direct dependencies of each task of the workflow version a pipeline ran. */
  async #dependencies(row: PipelineRow): Promise<Map<string, readonly string[]>> {
    const registered = this.#registry.find(row.workflowName);
    const tasks =
      registered?.version === row.workflowVersion
        ? registered.tasks.map((task) => ({ id: task.id, dependsOn: task.dependsOn ?? [] }))
        : (await this.#storage.workflows.listWorkflows()).find(
            (info) => info.name === row.workflowName && info.version === row.workflowVersion,
          )?.tasks;
    if (tasks === undefined) {
      throw new WorkflowNotFoundError(
        `Execution ${row.id} ran version ${row.workflowVersion} of workflow "${row.workflowName}", which no runner has stored, so its task dependencies are unknown; start a runner that registers that version to retry it.`,
      );
    }
    return new Map(tasks.map((task) => [task.id, task.dependsOn]));
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
   * Every workflow version some runner registered on this database, by name then oldest
   * first, with its definition (no code) and when a runner that has it was last seen.
   * @throws DatabaseError when the table cannot be read.
   */
  async listWorkflows(): Promise<WorkflowInfo[]> {
    this.#assertOpen();
    return this.#storage.workflows.listWorkflows();
  }

  /**
   * The runner processes recorded on this database, oldest start first: by default those
   * not shut down gracefully (crashed ones included, with `alive: false` once their
   * heartbeat is 30 s old).
   * @throws ValidationError when `includeStopped` is not a boolean.
   * @throws DatabaseError when the table cannot be read.
   */
  async listRunners(options: ListRunnersOptions = {}): Promise<RunnerInfo[]> {
    this.#assertOpen();
    const rows = await this.#storage.runners.listRunners();
    return toRunnerInfos(rows, options, this.#clock.now());
  }

  /**
   * Closes the database connections. Calls still waiting in `execute()` or `wait()` reject
   * with PipelineTimeoutError (their pipelines keep running). Idempotent.
   */
  close(): Promise<void> {
    return this.closeWith(
      new PipelineTimeoutError(
        'The client was closed before the pipeline finished; it keeps running. Wait on it from an open client.',
      ),
    );
  }

  async #close(reason: PipelineTimeoutError): Promise<void> {
    this.#unsubscribe();
    this.#waiters.close(reason);
    await this.#storage.close();
  }

  /**
   * This process's worker finished a pipeline (its last outcome committed here): wakes the
   * calls waiting on it, emits `pipeline:completed` or `pipeline:failed`, and tells the cron
   * scheduler of a scheduled pipeline that failed (`pauseOnFailure`). @internal
   */
  pipelineFinished(row: PipelineRow, tasks: readonly TaskRow[] | null): void {
    this.#waiters.notify(row, tasks);
    const startMs = (row.startedAt ?? row.createdAt).getTime();
    this.#emit(row.status === 'failed' ? 'pipeline:failed' : 'pipeline:completed', {
      executionId: row.id,
      workflowName: row.workflowName,
      status: row.status,
      durationMs: (row.completedAt?.getTime() ?? startMs) - startMs,
      error: row.error,
    });
    if (row.status === 'failed' && row.scheduleId !== null) void this.scheduler.pipelineFailed(row.scheduleId, row.id);
  }

  /**
   * Closes the client with `reason` as the error of the calls still waiting. A runner closes
   * its client last, once its worker has stopped. @internal
   */
  closeWith(reason: PipelineTimeoutError): Promise<void> {
    this.#closed ??= this.#close(reason);
    return this.#closed;
  }

  /** @throws ConfigurationError after `close()`. */
  #assertOpen(): void {
    if (this.#closed !== undefined) {
      throw new ConfigurationError('This client was closed; create a new one with OrreryClient.create().');
    }
  }

  /**
   * Another process committed work (a cross-process notification): the calls waiting on the
   * pipeline (or, after a reconnect, on every pipeline) read it now rather than at their next poll.
   */
  #wakeWaiters(wakeUp: WakeUp): void {
    if (wakeUp.kind === 'pipeline') this.#waiters.wake(wakeUp.id);
    else if (wakeUp.kind === 'all') this.#waiters.wake();
  }

  /** A pipeline was committed by this process. */
  #pipelineCreated(pipeline: Pick<PipelineRow, 'id' | 'workflowName' | 'idempotencyKey' | 'scheduledTime'>): void {
    this.#emit('pipeline:created', {
      executionId: pipeline.id,
      workflowName: pipeline.workflowName,
      idempotencyKey: pipeline.idempotencyKey,
      scheduledTime: pipeline.scheduledTime,
    });
    this.#localWork.workReady();
  }

  /**
   * First pause before a waiter reads a pipeline of `workflowName`: the local work's choice when
   * it runs the workflow; else none with cross-process wake-ups (one read for a pipeline that
   * finished before the wait, then notifications and the `pollIntervalMs` fallback), else a
   * short one that backs off.
   */
  #firstPollDelayMs(workflowName: string): number {
    return (
      this.#localWork.firstPollDelayMs(workflowName) ?? (this.#storage.wakeUps === undefined ? FIRST_POLL_DELAY_MS : 0)
    );
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
    const { row, tasks } = await this.#waiters.wait(id, timeoutMs, this.#firstPollDelayMs(workflowName));
    return toPipelineResult(row, tasks ?? (await this.#storage.executions.listTasks(id)));
  }

  async #pipeline(executionId: string): Promise<PipelineRow> {
    const row = await this.#storage.executions.getPipeline(checkExecutionId(executionId));
    if (row === null) throw executionNotFound(executionId);
    return row;
  }
}

/**
 * Every call of {@link OrreryClient} a runner offers as its own (all but `close()`, which a
 * runner answers with `shutdown()`): the one list of what "a runner is a client" means.
 */
export const CLIENT_CALLS = [
  'executeAsync',
  'executeAsyncMany',
  'execute',
  'getExecutionStatus',
  'getExecutionResult',
  'cancelExecution',
  'pauseExecution',
  'resumeExecution',
  'resolveExecutionId',
  'retryExecution',
  'listExecutions',
  'listWorkflows',
  'listRunners',
  ...SCHEDULE_CALLS,
] as const satisfies ReadonlyArray<keyof OrreryClient>;

/** The calls of {@link CLIENT_CALLS}, as a type: what a {@link DefaultRunner} has of its client. */
export type ClientCalls = Pick<OrreryClient, (typeof CLIENT_CALLS)[number]>;
