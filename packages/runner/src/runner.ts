import {
  ConfigurationError,
  emitSafely,
  failingLoops,
  PipelineTimeoutError,
  type RunnerRow,
  type RunnerStore,
  type Storage,
  systemClock,
  type WakeUp,
  type Workflow,
} from '@orreryjs/core';
import { EventEmitter } from 'eventemitter3';
import type { Registry } from 'prom-client';
import { AdmissionSweep } from './admission.js';
import { CLIENT_CALLS, type ClientCalls, OrreryClient } from './client.js';
import { type DefaultRunnerConfig, type ResolvedRunnerConfig, resolveConfig } from './config.js';
import type { EmitEvent, RunnerEvents } from './events.js';
import { checkHealth, listStranded, type RunnerHealth, type StrandedSources } from './health.js';
import { HeartbeatLoop, OffsetClock } from './heartbeat.js';
import { RunnerMetrics } from './metrics.js';
import { openStorage } from './open-storage.js';
import { passCallsThrough } from './pass-through.js';
import { WorkflowRegistry } from './registry.js';
import { RetentionLoop } from './retention.js';
import { checkTimeoutMs } from './validate.js';
import { Worker } from './worker/worker.js';

export { REMOTE_STOP_MESSAGE } from './worker/worker.js';

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

export interface DefaultRunner extends ClientCalls {}

/**
 * The durable {@link PipelineExecutor}: runs registered workflows from the database, with
 * leases, retries and fencing, alone or beside other runners sharing the database. It is an
 * {@link OrreryClient} plus a worker that runs tasks, wired together here: every client call
 * works on it (passed to its client), and `executeAsync()` of a workflow it has not registered
 * starts the latest version another runner stored (its tasks then run on that runner).
 *
 * `executeAsync()` works at any time, before `start()` too: it only writes the pipeline.
 * Tasks run once some runner with the workflow registered is started, so `execute()` and
 * `wait()` on a runner that was never started wait for another runner to do the work (or
 * time out).
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the client's calls declared by the interface above are given to the prototype in the static block (passCallsThrough), so each exists.
export class DefaultRunner extends EventEmitter<RunnerEvents> {
  static {
    passCallsThrough(DefaultRunner, (runner) => runner.#client, CLIENT_CALLS);
  }

  readonly #config: ResolvedRunnerConfig;
  readonly #storage: Storage;
  readonly #registry: WorkflowRegistry;
  readonly #clock: OffsetClock;
  /** Starts, inspects and manages work; its events are this runner's. */
  readonly #client: OrreryClient;
  /** Runs the registered workflows' tasks. */
  readonly #worker: Worker;
  readonly #heartbeat: HeartbeatLoop;
  readonly #retention: RetentionLoop;
  readonly #admissionSweep: AdmissionSweep;
  readonly #metrics: RunnerMetrics;
  /**
   * Ends this runner's wake-up subscription, taken at start() for its worker and cron tick (the
   * client takes its own at its first wait): a runner that is never started only starts work,
   * and is woken by nothing.
   */
  #unsubscribe: () => void = () => {};
  /** Writes of registered workflows to the `workflows` table still in flight (from `register()`). */
  #upserts: Promise<void> = Promise.resolve();
  #started: Promise<void> | undefined;
  #stopped: Promise<void> | undefined;

  private constructor(config: ResolvedRunnerConfig, storage: Storage, registry: WorkflowRegistry) {
    super();
    const { logger, runnerId } = config;
    const clock = new OffsetClock(config.clock, config.clock === systemClock);
    this.#config = config;
    this.#storage = storage;
    this.#registry = registry;
    this.#clock = clock;
    const lostBefore = () => new Date(clock.now().getTime() - config.cronLostThresholdMs);
    this.#metrics = new RunnerMetrics(() => this.#worker.runningTasks, {
      countWork: () => storage.executions.countWork(clock.now()),
      countLost: () => storage.cron.countLostOccurrences(lostBefore()),
      countAbandoned: () => storage.cron.countAbandonedOccurrences(),
      countStranded: async (limit) => (await listStranded(this.#strandedSources(), lostBefore(), limit)).length,
      concurrencyGroups: () => storage.executions.listConcurrencyGroups(null),
    });
    // Every event, the client's and the worker's, is recorded in the metrics and emitted by this runner.
    const emit: EmitEvent = (event, payload) => {
      this.#metrics.record(event, payload);
      emitSafely(this as never, logger, event, payload);
    };
    this.#worker = new Worker({
      store: storage.executions,
      registry,
      runnerId,
      maxConcurrentTasks: config.maxConcurrentTasks,
      taskTimeoutMs: config.taskTimeoutMs,
      taskLeaseMs: config.taskLeaseMs,
      pollIntervalMs: config.pollIntervalMs,
      maxContextBytes: config.maxContextBytes,
      hasWakeUps: storage.wakeUps !== undefined,
      clock,
      logger,
      emit,
      pipelineFinished: (row, tasks, slotsGivenOn) => this.#client.pipelineFinished(row, tasks, slotsGivenOn),
    });
    this.#client = new OrreryClient({ config, storage, registry, clock, emit, localWork: this.#worker });
    this.#heartbeat = new HeartbeatLoop({
      runners: seenWithWorkflows(storage, registry),
      runnerId,
      clock,
      workflows: () => registry.names(),
      logger,
    });
    this.#retention = new RetentionLoop({ storage, ...config.retention, clock, logger });
    this.#admissionSweep = new AdmissionSweep(storage.executions, clock, logger);
  }

  /**
   * Opens (and by default migrates) the database, measures this host's clock offset from the
   * database's (so that schedule management, triggers, backfills and `executeAsync` use
   * database time before `start()` too; the heartbeat re-measures it after `start()`),
   * registers `config.workflows` and stores their definitions in the `workflows` table, where
   * clients find them.
   * @throws ConfigurationError for an invalid option, a duplicate workflow name, a database
   *   that cannot be opened, or (with `migrate: false`) a schema older than the code.
   * @throws DatabaseError when a migration, the clock measurement or the workflows' upsert fails.
   */
  static async create(config: DefaultRunnerConfig = {}): Promise<DefaultRunner> {
    const resolved = resolveConfig(config);
    const registry = new WorkflowRegistry();
    for (const workflow of resolved.workflows) registry.add(workflow);
    const storage = await openStorage(resolved);
    const runner = new DefaultRunner(resolved, storage, registry);
    try {
      await runner.#clock.measure(storage.runners);
      await storage.workflows.upsertWorkflows(registry.definitions(), runner.#clock.now());
    } catch (error) {
      await storage.close().catch(() => undefined);
      throw error;
    }
    return runner;
  }

  /** The storage this runner opened. @internal For tests that watch the statements it sends. */
  get storage(): Storage {
    return this.#storage;
  }

  /** This runner's id in the `runners` table and in task leases. */
  get runnerId(): string {
    return this.#config.runnerId;
  }

  /**
   * Registers a workflow, so that this runner accepts and runs its pipelines, and stores its
   * definition in the `workflows` table (in the background; a failure is logged and retried
   * at the next heartbeat). Chainable; allowed after `start()` too.
   * @throws ConfigurationError when another workflow of that name is registered.
   */
  register(workflow: Workflow): this {
    this.#assertOpen();
    this.#registry.add(workflow);
    const definitions = this.#registry.definitions();
    this.#upserts = this.#upserts.then(() =>
      this.#storage.workflows.upsertWorkflows(definitions, this.#clock.now()).catch((error: unknown) => {
        this.#config.logger.warn({ err: error, workflowName: workflow.name }, 'could not store a registered workflow');
      }),
    );
    this.#worker.workReady();
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
    this.#unsubscribe = this.#storage.wakeUps?.subscribe((wakeUp) => this.#wakeUp(wakeUp)) ?? (() => {});
    await this.#heartbeat.beat();
    this.#heartbeat.start();
    this.#worker.start();
    this.#retention.start();
    this.#admissionSweep.start();
    this.#client.scheduler.start();
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

  /** For a runner, {@link shutdown} with its default timeout. */
  close(): Promise<void> {
    return this.shutdown();
  }

  async #shutdown(timeoutMs: number): Promise<void> {
    const config = this.#config;
    const failures: unknown[] = [];
    const step = async (name: string, work: () => Promise<unknown>) => {
      try {
        await work();
      } catch (error) {
        failures.push(error);
        config.logger.error({ err: error, step: name }, 'shutdown step failed');
      }
    };
    await this.#started?.catch(() => undefined);
    await step('stop cron', () => this.#client.scheduler.stop());
    await step('stop claiming', () => this.#worker.stopClaiming());
    await step('drain running tasks', async () => {
      const released = await this.#worker.drain(timeoutMs);
      if (released !== null) config.logger.info({ released }, 'released the leases of unfinished tasks');
    });
    // Wake-ups are heard until the tasks have drained: a remote cancel must still stop them.
    this.#unsubscribe();
    await step('stop loops', () =>
      Promise.all([
        this.#worker.stopLoops(),
        this.#heartbeat.stop(),
        this.#retention.stop(),
        this.#admissionSweep.stop(),
        this.#upserts,
      ]),
    );
    if (this.#heartbeat.beaten) {
      await step('mark stopped', () => this.#storage.runners.markStopped(config.runnerId, this.#clock.now()));
    }
    await step('close database', () =>
      this.#client.closeWith(
        new PipelineTimeoutError(
          'The runner shut down before the pipeline finished; its state is durable and another runner (or a restart) resumes it. Wait on it from a running runner.',
        ),
      ),
    );
    if (failures.length > 0) throw failures[0];
  }

  /**
   * This process's health for a readiness probe: `unhealthy` before `start()`, after
   * `shutdown()` (without reading the closed database) or when its database cannot be read;
   * `degraded` while one of its loops is backing off after failed ticks; else `ok`. Fleet conditions read from the database (lost occurrences, stalled tasks,
   * schedules no live runner can run) are listed in the report but never make it unhealthy:
   * one stale schedule must not take every runner out of its load balancer. Never throws.
   */
  async health(): Promise<RunnerHealth> {
    return checkHealth({
      ...this.#strandedSources(),
      runnerId: this.#config.runnerId,
      running: this.#started !== undefined && this.#stopped === undefined,
      closed: this.#stopped !== undefined,
      taskLoopRunning: this.#worker.claiming,
      runningTasks: this.#worker.runningTasks,
      cron: this.#client.scheduler.health(),
      failingLoops: [
        ...failingLoops([...this.#worker.loops, this.#heartbeat, this.#retention, this.#admissionSweep]),
        ...this.#client.scheduler.failingLoops(),
      ],
      executionStore: this.#storage.executions,
      lostThresholdMs: this.#config.cronLostThresholdMs,
      clock: this.#clock,
    });
  }

  /** What finding stranded schedules reads, for {@link health} and the `orrery_schedules_stranded` gauge. */
  #strandedSources(): StrandedSources {
    return {
      cronStore: this.#storage.cron,
      liveWorkflows: async () => (await this.listRunners()).filter((r) => r.alive).flatMap((r) => r.workflows),
    };
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

  /**
   * Another process committed work: the worker claims or stops local work, and the cron
   * scheduler re-reads its next tick (the client wakes its own waiters).
   */
  #wakeUp(wakeUp: WakeUp): void {
    this.#worker.wakeUp(wakeUp);
    if (wakeUp.kind === 'schedule') this.#client.scheduler.wake(wakeUp.nextRunAt);
    else if (wakeUp.kind === 'all') this.#client.scheduler.wake();
  }

  /** @throws ConfigurationError after `shutdown()`. */
  #assertOpen(): void {
    if (this.#stopped !== undefined) throw shutDownError();
  }
}

/**
 * The runner store the heartbeat writes through: each beat also moves `lastSeenAt` of the
 * registered workflows forward (and stores any whose upsert at registration failed), so that
 * `listWorkflows()` tells which versions a live runner still has.
 */
function seenWithWorkflows(storage: Storage, registry: WorkflowRegistry): RunnerStore {
  const { runners, workflows } = storage;
  return {
    heartbeat: async (runner: Omit<RunnerRow, 'stoppedAt'>) => {
      await runners.heartbeat(runner);
      await workflows.upsertWorkflows(registry.definitions(), runner.heartbeatAt);
    },
    markStopped: (id, now) => runners.markStopped(id, now),
    listRunners: () => runners.listRunners(),
    databaseNow: () => runners.databaseNow(),
    deleteSilentRunners: (before, batchSize) => runners.deleteSilentRunners(before, batchSize),
  };
}

function shutDownError(): ConfigurationError {
  return new ConfigurationError('This runner was shut down; create a new one with DefaultRunner.create().');
}
