import type { Span } from '@opentelemetry/api';
import {
  assertNoNul,
  type ConcurrencyGroupInfo,
  ConfigurationError,
  type Context,
  checkPage,
  type ExecuteOptions,
  emitSafely,
  type Json,
  type ListExecutionsFilter,
  MAX_MAP_ITEMS,
  type MapInstance,
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
  type WorkflowInfo,
} from '@orreryjs/core';
import { CronService } from '@orreryjs/cron';
import { EventEmitter } from 'eventemitter3';
import { GroupAdmission } from './admission.js';
import { type OrreryClientConfig, resolveClientConfig } from './client-config.js';
import { CompletionWaiters, FIRST_POLL_DELAY_MS } from './completion.js';
import { cronSettingsOf, type ResolvedRunnerConfig } from './config.js';
import { SCHEDULE_CALLS, ScheduleCalls } from './cron-api.js';
import { cronHandoffOf } from './cron-handoff.js';
import type { EmitEvent, RunnerEvents } from './events.js';
import { checkExecuteRequests, type ExecuteRequest } from './execute-requests.js';
import { CONTROL_CALLS, ExecutionControl } from './execution-control.js';
import { OffsetClock } from './heartbeat.js';
import { KnownWorkflows } from './known-workflows.js';
import { type LocalWork, NO_LOCAL_WORK } from './local-work.js';
import { openStorage } from './open-storage.js';
import { passCallsThrough } from './pass-through.js';
import { PipelineWriter } from './pipeline-writer.js';
import { WorkflowRegistry } from './registry.js';
import { toMapInstance, toPipelineResult, toPipelineSummary } from './result.js';
import { type ListRunnersOptions, type RunnerInfo, toRunnerInfos } from './runner-info.js';
import { checkPipelineRequest, newPipelineRows, startPipeline } from './start-pipeline.js';
import { inProducerSpan, SPAN_ATTRIBUTES, scheduleAttributes, traceContextOf } from './tracing.js';
import { checkListFilter, checkTimeoutMs, readPipeline } from './validate.js';

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

/** The schedule and control calls a client offers as its own (see {@link ScheduleCalls}, {@link ExecutionControl}). */
type PartCalls = Pick<ScheduleCalls, (typeof SCHEDULE_CALLS)[number]> &
  Pick<ExecutionControl, (typeof CONTROL_CALLS)[number]>;

export interface OrreryClient extends PartCalls {}

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
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the schedule and control calls declared by the interface above are given to the prototype in the static block (passCallsThrough), so each exists.
export class OrreryClient extends EventEmitter<RunnerEvents> implements PipelineExecutor {
  static {
    passCallsThrough(OrreryClient, (client) => client.#schedules, SCHEDULE_CALLS);
    passCallsThrough(OrreryClient, (client) => client.#control, CONTROL_CALLS);
  }

  readonly #config: ResolvedRunnerConfig;
  readonly #storage: Storage;
  readonly #clock: OffsetClock;
  readonly #known: KnownWorkflows;
  readonly #registry: WorkflowRegistry;
  readonly #waiters: CompletionWaiters;
  readonly #schedules: ScheduleCalls;
  readonly #control: ExecutionControl;
  readonly #localWork: LocalWork;
  readonly #emit: EmitEvent;
  readonly #writer: PipelineWriter;
  readonly #admission: GroupAdmission;
  /** Ends the waiters' wake-up subscription, taken at the first wait (see {@link #waitForResult}). */
  #unsubscribe: (() => void) | undefined;
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
    this.#clock = clock;
    this.#localWork = parts.localWork ?? NO_LOCAL_WORK;
    this.#emit = parts.emit ?? ((event, payload) => emitSafely(this as never, logger, event, payload));
    this.#known = new KnownWorkflows(registry, storage.workflows);
    this.#registry = registry;
    this.#writer = new PipelineWriter(storage.executions);
    this.#admission = new GroupAdmission(storage.executions, clock, logger);
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
        cancelled: (ids) => this.#control.cancelledByCron(ids),
      }),
    });
    this.#control = new ExecutionControl({
      storage,
      registry,
      clock,
      localWork: this.#localWork,
      waiters: this.#waiters,
      admission: this.#admission,
      emit: this.#emit,
      assertOpen: () => this.#assertOpen(),
      handle: (pipeline, defaultTimeoutMs) => this.#handle(pipeline, defaultTimeoutMs),
      pipelineTimeoutMs: config.pipelineTimeoutMs,
      maxContextBytes: config.maxContextBytes,
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
    const checked = await checkExecuteRequests(requests, (name) => this.#known.resolve(name), this.#config);
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
    return (await readPipeline(this.#storage.executions, executionId)).status;
  }

  /**
   * Everything known about an execution now (it need not be finished): status, timings,
   * the context so far and every task.
   * @throws ExecutionNotFoundError for an unknown id.
   */
  async getExecutionResult(executionId: string): Promise<PipelineResult> {
    const row = await readPipeline(this.#storage.executions, executionId);
    return this.#result(row, await this.#storage.executions.listTasks(row.id));
  }

  /**
   * The instances of the map task `taskId` of an execution, in item order: each item with its
   * status, attempts, times, error and result. Empty before the task has mapped its items, and
   * for a task that is not a map task. Its result's `instances` gives the counts alone. Every
   * instance by default (a map has at most MAX_MAP_ITEMS); `limit` and `offset` page them.
   * @throws ExecutionNotFoundError for an unknown id.
   * @throws ValidationError when `taskId` is not a string, or holds a NUL character, or for a bad
   *   limit (1–MAX_MAP_ITEMS) or offset.
   */
  async listMapInstances(
    executionId: string,
    taskId: string,
    options: { limit?: number; offset?: number } = {},
  ): Promise<MapInstance[]> {
    const page = checkPage(options, { maxLimit: MAX_MAP_ITEMS });
    if (typeof taskId !== 'string') {
      throw new ValidationError(`taskId must be a task's id (a string), got ${JSON.stringify(taskId)}.`);
    }
    // Refused here, on either database, rather than by PostgreSQL as a DatabaseError.
    assertNoNul(taskId, `taskId ${JSON.stringify(taskId)}`);
    const row = await readPipeline(this.#storage.executions, executionId);
    return (await this.#storage.executions.listMapInstances(row.id, taskId, page)).map(toMapInstance);
  }

  /**
   * Executions, newest first, optionally of one workflow or status.
   * @throws ValidationError for a bad status, limit (1–1000, default 100) or offset.
   */
  async listExecutions(filter: ListExecutionsFilter = {}): Promise<PipelineSummary[]> {
    return this.#summaries(await this.#storage.executions.listPipelines(checkListFilter(filter)));
  }

  /**
   * One execution as {@link listExecutions} lists it (no context, no tasks): with its
   * priority and, while it is pending, what it waits for; what an operator's detail view shows.
   * @throws ExecutionNotFoundError for an unknown id.
   */
  async getExecutionSummary(executionId: string): Promise<PipelineSummary> {
    const [summary] = await this.#summaries([await readPipeline(this.#storage.executions, executionId)]);
    return summary!;
  }

  /** Rows as summaries; what the queued ones wait for is one more read, only when a row may be queued. */
  async #summaries(rows: readonly PipelineRow[]): Promise<PipelineSummary[]> {
    const mayBeQueued = rows.filter((row) => row.status === 'pending' && row.concurrency !== null).map((row) => row.id);
    const queued = new Map(
      (mayBeQueued.length === 0 ? [] : await this.#storage.executions.listQueuedGroups(mayBeQueued)).map((group) => [
        group.pipelineExecutionId,
        group,
      ]),
    );
    const now = this.#clock.now();
    return rows.map((row) => toPipelineSummary(row, queued.get(row.id), now));
  }

  /**
   * The occupancy of every concurrency group with unfinished pipelines (of `workflowName` when
   * given), by workflow then group: its active and queued pipelines and its limit.
   * @throws ValidationError when `workflowName` is given and not a string.
   * @throws DatabaseError when the tables cannot be read.
   */
  async listConcurrencyGroups(filter: { workflowName?: string } = {}): Promise<ConcurrencyGroupInfo[]> {
    this.#assertOpen();
    const { workflowName } = filter;
    if (workflowName !== undefined && typeof workflowName !== 'string') {
      throw new ValidationError(`workflowName must be a string, got ${JSON.stringify(workflowName)}.`);
    }
    return this.#storage.executions.listConcurrencyGroups(workflowName ?? null);
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
   * heartbeat is 30 s old) and heard from within the last day; `includeStopped` lists all.
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
    this.#unsubscribe?.();
    await this.#admission.settled();
    this.#waiters.close(reason);
    await this.#storage.close();
  }

  /**
   * This process's worker finished a pipeline (its last outcome committed here): wakes the
   * calls waiting on it, emits `pipeline:completed` or `pipeline:failed`, and tells the cron
   * scheduler of a scheduled pipeline that failed (`pauseOnFailure`); gives its concurrency
   * slots on to the queued pipelines of its groups. @internal
   */
  pipelineFinished(row: PipelineRow, tasks: readonly TaskRow[] | null, slotsGivenOn = false): void {
    if (!slotsGivenOn) this.#admission.freed(row);
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
    // Wake-ups from the first wait on: a client that only starts work is woken by none of the
    // schema's notifications. One that came before the subscription took effect is caught by the
    // wake-up of every waiter that follows the LISTEN (see the Postgres adapter's wake-up.ts).
    this.#unsubscribe ??= this.#storage.wakeUps?.subscribe((wakeUp) => this.#wakeWaiters(wakeUp));
    const { row, tasks } = await this.#waiters.wait(id, timeoutMs, this.#firstPollDelayMs(workflowName));
    return this.#result(row, tasks ?? (await this.#storage.executions.listTasks(id)));
  }

  /**
   * The public result, with the instance counts of its map tasks: read only when the workflow
   * has a map task, or is not registered here (then this process cannot tell).
   */
  async #result(row: PipelineRow, tasks: readonly TaskRow[]): Promise<PipelineResult> {
    const workflow = this.#registry.find(row.workflowName);
    const mapsItems = workflow === undefined || workflow.tasks.some((task) => task.map !== undefined);
    return toPipelineResult(row, tasks, mapsItems ? await this.#storage.executions.countMapInstances(row.id) : []);
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
  'getExecutionSummary',
  'listMapInstances',
  'listExecutions',
  'listConcurrencyGroups',
  'listWorkflows',
  'listRunners',
  ...CONTROL_CALLS,
  ...SCHEDULE_CALLS,
] as const satisfies ReadonlyArray<keyof OrreryClient>;

/** The calls of {@link CLIENT_CALLS}, as a type: what a {@link DefaultRunner} has of its client. */
export type ClientCalls = Pick<OrreryClient, (typeof CLIENT_CALLS)[number]>;
