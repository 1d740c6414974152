import {
  ConfigurationError,
  failingLoops,
  MAX_TIMER_MS,
  type PipelineRow,
  PipelineTimeoutError,
  type RunnerRow,
  type RunnerStore,
  type Storage,
  systemClock,
  type TaskRow,
  type WakeUp,
  type Workflow,
} from '@orreryjs/core';
import type { Registry } from 'prom-client';
import { ActiveTasks } from './active-tasks.js';
import { ClaimLoop } from './claim-loop.js';
import { ClaimedAhead } from './claimed-ahead.js';
import { OrreryClient } from './client.js';
import { type DefaultRunnerConfig, type ResolvedRunnerConfig, resolveConfig } from './config.js';
import { ControlWatch, type RemoteStop } from './control-watch.js';
import type { RunnerEvents } from './events.js';
import { checkHealth, listStranded, type RunnerHealth, type StrandedSources } from './health.js';
import { HeartbeatLoop, OffsetClock } from './heartbeat.js';
import { LeaseLoop } from './lease.js';
import { RunnerMetrics } from './metrics.js';
import { openStorage } from './open-storage.js';
import { WorkflowRegistry } from './registry.js';
import { RetentionLoop } from './retention.js';
import type { AttemptEnvironment } from './task-attempt.js';
import { checkTimeoutMs } from './validate.js';

/** What the runner logs when it stops local work on a pipeline another process paused or cancelled. */
export const REMOTE_STOP_MESSAGE = 'stopped the local work of a pipeline paused or cancelled elsewhere';

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
 * leases, retries and fencing, alone or beside other runners sharing the database. It is an
 * {@link OrreryClient} that also runs tasks: every client method works on it, and
 * `executeAsync()` of a workflow it has not registered starts the latest version another
 * runner stored (its tasks then run on that runner).
 *
 * `executeAsync()` works at any time, before `start()` too: it only writes the pipeline.
 * Tasks run once some runner with the workflow registered is started, so `execute()` and
 * `wait()` on a runner that was never started wait for another runner to do the work (or
 * time out).
 */
export class DefaultRunner extends OrreryClient {
  readonly #active = new ActiveTasks();
  /** Tasks claimed ahead of a free slot: started by the claim loop, renewed by the lease loop. */
  readonly #ahead = new ClaimedAhead();
  readonly #claimLoop: ClaimLoop;
  readonly #leaseLoop: LeaseLoop;
  /** Polls for remote pauses and cancels where the storage has no wake-ups; null where it has. */
  readonly #controlWatch: ControlWatch | null;
  readonly #heartbeat: HeartbeatLoop;
  readonly #retention: RetentionLoop;
  readonly #metrics: RunnerMetrics;
  /** Writes of registered workflows to the `workflows` table still in flight (from `register()`). */
  #upserts: Promise<void> = Promise.resolve();
  #started: Promise<void> | undefined;
  #stopped: Promise<void> | undefined;

  private constructor(config: ResolvedRunnerConfig, storage: Storage, registry: WorkflowRegistry) {
    super({ config, storage, registry, clock: new OffsetClock(config.clock, config.clock === systemClock) });
    const { logger, runnerId } = config;
    const clock = this.clock;
    const lostBefore = () => new Date(this.clock.now().getTime() - this.config.cronLostThresholdMs);
    this.#metrics = new RunnerMetrics(() => this.#active.size, {
      countWork: () => this.storage.executions.countWork(this.clock.now()),
      countLost: () => this.storage.cron.countLostOccurrences(lostBefore()),
      countAbandoned: () => this.storage.cron.countAbandonedOccurrences(),
      countStranded: async (limit) => (await listStranded(this.#strandedSources(), lostBefore(), limit)).length,
    });
    const environment: AttemptEnvironment = {
      store: storage.executions,
      registry,
      active: this.#active,
      runnerId,
      taskTimeoutMs: config.taskTimeoutMs,
      maxContextBytes: config.maxContextBytes,
      clock,
      logger,
      emit: (event, payload) => this.emitEvent(event, payload),
      pipelineFinished: (row, tasks) => this.#pipelineFinished(row, tasks),
      wake: (atMs) => (atMs === undefined ? this.#claimLoop.nudge() : this.#claimLoop.nudgeAt(atMs)),
      slotFreed: () => this.#claimLoop.slotFreed(),
    };
    const shared = { store: storage.executions, active: this.#active, ahead: this.#ahead, runnerId, clock, logger };
    this.#claimLoop = new ClaimLoop({
      ...shared,
      registry,
      environment,
      maxConcurrentTasks: config.maxConcurrentTasks,
      taskLeaseMs: config.taskLeaseMs,
      pollIntervalMs: config.pollIntervalMs,
    });
    this.#leaseLoop = new LeaseLoop({ ...shared, taskLeaseMs: config.taskLeaseMs });
    this.#controlWatch =
      storage.wakeUps === undefined
        ? new ControlWatch({
            ...shared,
            pollIntervalMs: config.pollIntervalMs,
            stop: (id, cause) => this.#stopRemotely(id, cause),
          })
        : null;
    this.#heartbeat = new HeartbeatLoop({
      runners: seenWithWorkflows(storage, registry),
      runnerId,
      clock,
      workflows: () => registry.names(),
      logger,
    });
    this.#retention = new RetentionLoop({ storage, ...config.retention, clock, logger });
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
  static override async create(config: DefaultRunnerConfig = {}): Promise<DefaultRunner> {
    const resolved = resolveConfig(config);
    const registry = new WorkflowRegistry();
    for (const workflow of resolved.workflows) registry.add(workflow);
    const storage = await openStorage(resolved);
    const runner = new DefaultRunner(resolved, storage, registry);
    try {
      await runner.clock.measure(storage.runners);
      await storage.workflows.upsertWorkflows(registry.definitions(), runner.clock.now());
    } catch (error) {
      await storage.close().catch(() => undefined);
      throw error;
    }
    return runner;
  }

  /** This runner's id in the `runners` table and in task leases. */
  get runnerId(): string {
    return this.config.runnerId;
  }

  /**
   * Registers a workflow, so that this runner accepts and runs its pipelines, and stores its
   * definition in the `workflows` table (in the background; a failure is logged and retried
   * at the next heartbeat). Chainable; allowed after `start()` too.
   * @throws ConfigurationError when another workflow of that name is registered.
   */
  register(workflow: Workflow): this {
    this.assertOpen();
    this.registry.add(workflow);
    const definitions = this.registry.definitions();
    this.#upserts = this.#upserts.then(() =>
      this.storage.workflows.upsertWorkflows(definitions, this.clock.now()).catch((error: unknown) => {
        this.config.logger.warn({ err: error, workflowName: workflow.name }, 'could not store a registered workflow');
      }),
    );
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
    this.#controlWatch?.start();
    this.#claimLoop.start();
    this.#retention.start();
    this.cron.start();
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
  override close(): Promise<void> {
    return this.shutdown();
  }

  async #shutdown(timeoutMs: number): Promise<void> {
    const { config, storage, clock } = this;
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
    await step('stop cron', () => this.cron.stop());
    await step('stop claiming', () => this.#claimLoop.stop());
    await step('drain running tasks', async () => {
      if (await this.#whenIdle(timeoutMs)) return;
      // Tasks claimed ahead first: aborting the running ones frees slots that would start them.
      const leases = [...this.#ahead.drain(), ...this.#active.leases()];
      this.#active.abortAll('shutdown');
      await this.#active.settled();
      const released = await storage.executions.releaseLeases(config.runnerId, leases, clock.now());
      config.logger.info({ released }, 'released the leases of unfinished tasks');
    });
    await step('stop loops', () =>
      Promise.all([
        this.#leaseLoop.stop(),
        this.#controlWatch?.stop(),
        this.#heartbeat.stop(),
        this.#retention.stop(),
        this.#upserts,
      ]),
    );
    this.waiters.close(
      new PipelineTimeoutError(
        'The runner shut down before the pipeline finished; its state is durable and another runner (or a restart) resumes it. Wait on it from a running runner.',
      ),
    );
    if (this.#heartbeat.beaten) {
      await step('mark stopped', () => storage.runners.markStopped(config.runnerId, clock.now()));
    }
    await step('close database', () => storage.close());
    if (failures.length > 0) throw failures[0];
  }

  /**
   * {@link ActiveTasks.whenIdle} for a wait of any length (one timer holds at most MAX_TIMER_MS),
   * tasks claimed ahead included: one starts in the slot a task frees, in the same turn as that
   * task leaves `active`, so a wake-up that finds `active` filled again waits on.
   */
  async #whenIdle(timeoutMs: number): Promise<boolean> {
    const endsAtMs = performance.now() + timeoutMs;
    for (;;) {
      const leftMs = endsAtMs - performance.now();
      const idle = await this.#active.whenIdle(Math.max(0, Math.min(leftMs, MAX_TIMER_MS)));
      if (idle && this.#active.size === 0) return true;
      if (!idle && leftMs <= MAX_TIMER_MS) return false;
    }
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
      runnerId: this.config.runnerId,
      running: this.#started !== undefined && this.#stopped === undefined,
      closed: this.#stopped !== undefined,
      taskLoopRunning: this.#claimLoop.running,
      runningTasks: this.#active.size,
      cron: this.cron.health(),
      failingLoops: [
        ...failingLoops([this.#claimLoop, this.#leaseLoop, this.#heartbeat, this.#retention]),
        ...this.cron.failingLoops(),
      ],
      executionStore: this.storage.executions,
      lostThresholdMs: this.config.cronLostThresholdMs,
      clock: this.clock,
    });
  }

  /** What finding stranded schedules reads, for {@link health} and the `orrery_schedules_stranded` gauge. */
  #strandedSources(): StrandedSources {
    return {
      cronStore: this.storage.cron,
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

  /** @internal Records the event in the metrics, then emits it. */
  protected override emitEvent<K extends keyof RunnerEvents>(event: K, payload: RunnerEvents[K][0]): void {
    this.#metrics.record(event, payload);
    super.emitEvent(event, payload);
  }

  /**
   * @internal Ready tasks and resumed pipelines wake the claim loop, schedules the cron tick,
   * pipeline changes the waiters; a (re)connected listener wakes them all.
   */
  protected override wakeUp(wakeUp: WakeUp): void {
    super.wakeUp(wakeUp);
    switch (wakeUp.kind) {
      case 'tasks': {
        // Clock offsets are measured per process, so the writer's now may be a few ms ahead of ours:
        // claim when our clock reaches it, rather than now (finding nothing) and then only at the poll.
        const atMs = wakeUp.availableAt.getTime();
        if (atMs > this.clock.now().getTime()) this.#claimLoop.nudgeAt(atMs);
        else this.#claimLoop.nudge();
        return;
      }
      case 'pipeline':
        if (wakeUp.status === 'running' || wakeUp.status === 'pending') this.#claimLoop.nudge();
        // Paused or cancelled by another process: stop its attempts here now, not at the next lease renewal.
        else if (wakeUp.status === 'paused' || wakeUp.status === 'cancelled')
          this.#stopRemotely(wakeUp.id, wakeUp.status);
        return;
      case 'schedule':
        this.cron.wake(wakeUp.nextRunAt);
        return;
      case 'all':
        this.#claimLoop.nudge();
        this.cron.wake();
        return;
    }
  }

  /** @internal */
  protected override workReady(): void {
    this.#claimLoop.nudge();
  }

  /** @internal */
  protected override abortLocalTasks(executionId: string, cause: RemoteStop): void {
    this.#stopLocalWork(executionId, cause);
  }

  /** Another process paused or cancelled a pipeline: stop its local work as a local call would, and say so. */
  #stopRemotely(executionId: string, cause: RemoteStop): void {
    const { aborted, dropped } = this.#stopLocalWork(executionId, cause);
    if (aborted + dropped === 0) return;
    this.config.logger.info({ executionId, cause, aborted, dropped }, REMOTE_STOP_MESSAGE);
  }

  /** Aborts a pipeline's running attempts here and drops its tasks claimed ahead; returns how many of each. */
  #stopLocalWork(executionId: string, cause: RemoteStop): { aborted: number; dropped: number } {
    return {
      aborted: this.#active.abortPipeline(executionId, cause),
      dropped: this.#ahead.dropPipeline(executionId),
    };
  }

  /** @internal This runner most likely finishes the pipeline itself and is notified: no need to read it early. */
  protected override firstPollDelayMs(workflowName: string): number {
    const runsItHere = this.#claimLoop.running && this.registry.has(workflowName);
    return runsItHere ? this.config.pollIntervalMs : super.firstPollDelayMs(workflowName);
  }

  #pipelineFinished(row: PipelineRow, tasks: readonly TaskRow[] | null): void {
    this.waiters.notify(row, tasks);
    const startMs = (row.startedAt ?? row.createdAt).getTime();
    const payload = {
      executionId: row.id,
      workflowName: row.workflowName,
      status: row.status,
      durationMs: (row.completedAt?.getTime() ?? startMs) - startMs,
      error: row.error,
    };
    this.emitEvent(row.status === 'failed' ? 'pipeline:failed' : 'pipeline:completed', payload);
    // pauseOnFailure: the runner that ends a scheduled pipeline failed tells the scheduler.
    if (row.status === 'failed' && row.scheduleId !== null) void this.cron.pipelineFailed(row.scheduleId, row.id);
  }

  /** @throws ConfigurationError after `shutdown()`. @internal */
  protected override assertOpen(): void {
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
