import {
  type BackgroundLoop,
  type Clock,
  type ExecutionStore,
  type Logger,
  MAX_TIMER_MS,
  type PipelineRow,
  type TaskRow,
  type WakeUp,
} from '@orreryjs/core';
import type { EmitEvent } from '../events.js';
import type { LocalWork } from '../local-work.js';
import type { WorkflowRegistry } from '../registry.js';
import { ActiveTasks, type PipelineStopCause } from './active-tasks.js';
import { ClaimLoop } from './claim-loop.js';
import { ClaimedAhead } from './claimed-ahead.js';
import { ControlWatch } from './control-watch.js';
import { LeaseLoop } from './lease.js';
import { MapInputs } from './map-inputs.js';
import { RateGate } from './rate-gate.js';
import { type AttemptEnvironment, startAttempt } from './task-attempt.js';

/** What the worker logs when it stops local work on a pipeline another process paused or cancelled. */
export const REMOTE_STOP_MESSAGE = 'stopped the local work of a pipeline paused or cancelled elsewhere';

/** What a {@link Worker} is built from. */
export interface WorkerOptions {
  store: ExecutionStore;
  registry: WorkflowRegistry;
  runnerId: string;
  maxConcurrentTasks: number;
  taskTimeoutMs: number;
  taskLeaseMs: number;
  pollIntervalMs: number;
  maxContextBytes: number;
  /**
   * Whether the storage tells this process of other processes' pauses and cancels (wake-ups);
   * without them a {@link ControlWatch} polls for them.
   */
  hasWakeUps: boolean;
  clock: Clock;
  logger: Logger;
  emit: EmitEvent;
  /** An outcome committed here made its pipeline terminal; `tasks` are all its task rows when known without a read. */
  pipelineFinished(row: PipelineRow, tasks: readonly TaskRow[] | null, slotsGivenOn: boolean): void;
}

/**
 * The part of a runner that runs task code: it claims ready tasks of the registered workflows
 * (ahead of free slots too, for a busy worker), runs each attempt, commits the outcomes in
 * groups, renews the leases of what it holds, and stops the local work of pipelines paused or
 * cancelled here or elsewhere. Its client tells it of local calls through {@link LocalWork};
 * the runner passes it the storage's wake-ups.
 */
export class Worker implements LocalWork {
  readonly #options: WorkerOptions;
  readonly #active = new ActiveTasks();
  /** Tasks claimed ahead of a free slot: started by the claim loop, renewed by the lease loop. */
  readonly #ahead = new ClaimedAhead();
  readonly #claimLoop: ClaimLoop;
  readonly #leaseLoop: LeaseLoop;
  /** Polls for remote pauses and cancels where the storage has no wake-ups; null where it has. */
  readonly #controlWatch: ControlWatch | null;

  constructor(options: WorkerOptions) {
    this.#options = options;
    const { store, registry, runnerId, clock, logger } = options;
    const environment: AttemptEnvironment = {
      store,
      registry,
      active: this.#active,
      runnerId,
      taskTimeoutMs: options.taskTimeoutMs,
      maxContextBytes: options.maxContextBytes,
      clock,
      logger,
      emit: options.emit,
      pipelineFinished: options.pipelineFinished,
      wake: (atMs) => (atMs === undefined ? this.#claimLoop.nudge() : this.#claimLoop.nudgeAt(atMs)),
      outcomeReady: (entry) => this.#claimLoop.outcomeReady(entry),
      finish: (request) => this.#claimLoop.commit(request),
      rateGate: new RateGate(store),
      mapInputs: new MapInputs(store),
      slotFreed: (entry) => this.#claimLoop.slotFreed(entry),
    };
    const shared = { store, active: this.#active, ahead: this.#ahead, runnerId, clock, logger };
    this.#claimLoop = new ClaimLoop({
      ...shared,
      registry,
      startAttempt: (claimed) => startAttempt(claimed, environment),
      maxConcurrentTasks: options.maxConcurrentTasks,
      taskLeaseMs: options.taskLeaseMs,
      pollIntervalMs: options.pollIntervalMs,
    });
    this.#leaseLoop = new LeaseLoop({ ...shared, taskLeaseMs: options.taskLeaseMs });
    this.#controlWatch = options.hasWakeUps
      ? null
      : new ControlWatch({
          ...shared,
          pollIntervalMs: options.pollIntervalMs,
          stop: (id, cause) => this.#stopRemotely(id, cause),
        });
  }

  /** Tasks whose attempts run here now (code running, or outcome committing). */
  get runningTasks(): number {
    return this.#active.size;
  }

  /** Whether the claim loop runs: started and not stopping. */
  get claiming(): boolean {
    return this.#claimLoop.running;
  }

  /** The worker's loops, for health reports. */
  get loops(): readonly BackgroundLoop[] {
    return [this.#claimLoop, this.#leaseLoop];
  }

  start(): void {
    this.#leaseLoop.start();
    this.#controlWatch?.start();
    this.#claimLoop.start();
  }

  /** Stops claiming; the tasks running and claimed ahead go on. */
  stopClaiming(): Promise<void> {
    return this.#claimLoop.stop();
  }

  /**
   * Lets the running tasks (and those claimed ahead) finish for up to `timeoutMs`, then aborts
   * the rest and gives their leases back (not counted as failures). Returns how many leases were
   * given back.
   */
  async drain(timeoutMs: number): Promise<number | null> {
    if (await this.#whenIdle(timeoutMs)) return null;
    // Tasks claimed ahead first: aborting the running ones frees slots that would start them.
    const leases = [...this.#ahead.drain(), ...this.#active.leases()];
    this.#active.abortAll('shutdown');
    await this.#active.settled();
    const { store, runnerId, clock } = this.#options;
    return store.releaseLeases(runnerId, leases, clock.now());
  }

  /** Stops renewing leases and watching for remote stops: the last step, once nothing runs. */
  async stopLoops(): Promise<void> {
    await Promise.all([this.#leaseLoop.stop(), this.#controlWatch?.stop()]);
  }

  /** @inheritDoc LocalWork.workReady */
  workReady(): void {
    this.#claimLoop.nudge();
  }

  /** @inheritDoc LocalWork.stopPipeline */
  stopPipeline(executionId: string, cause: PipelineStopCause): void {
    this.#stopLocalWork(executionId, cause);
  }

  /** This worker most likely finishes the pipeline itself and is notified: no need to read it early. */
  firstPollDelayMs(workflowName: string): number | undefined {
    const runsItHere = this.#claimLoop.running && this.#options.registry.has(workflowName);
    return runsItHere ? this.#options.pollIntervalMs : undefined;
  }

  /**
   * Another process committed work: ready tasks and resumed pipelines wake the claim loop, a
   * pipeline paused or cancelled elsewhere stops its local work now (not at the next lease
   * renewal), and a (re)connected listener wakes the claim loop.
   */
  wakeUp(wakeUp: WakeUp): void {
    switch (wakeUp.kind) {
      case 'tasks':
        // Tasks of a workflow this runner does not run: another runner's claim takes them.
        if (wakeUp.workflowName !== undefined && !this.#options.registry.has(wakeUp.workflowName)) return;
        this.#claimLoop.wakeUp(wakeUp.availableAt.getTime());
        return;
      case 'pipeline':
        if (wakeUp.status === 'running' || wakeUp.status === 'pending') this.#claimLoop.nudge();
        else if (wakeUp.status === 'paused' || wakeUp.status === 'cancelled')
          this.#stopRemotely(wakeUp.id, wakeUp.status);
        return;
      case 'all':
        this.#claimLoop.nudge();
        return;
      case 'schedule':
        return;
    }
  }

  /** Another process paused or cancelled a pipeline: stop its local work as a local call would, and say so. */
  #stopRemotely(executionId: string, cause: PipelineStopCause): void {
    const { aborted, dropped } = this.#stopLocalWork(executionId, cause);
    if (aborted + dropped === 0) return;
    this.#options.logger.info({ executionId, cause, aborted, dropped }, REMOTE_STOP_MESSAGE);
  }

  /** Aborts a pipeline's running attempts here and drops its tasks claimed ahead; returns how many of each. */
  #stopLocalWork(executionId: string, cause: PipelineStopCause): { aborted: number; dropped: number } {
    return {
      aborted: this.#active.abortPipeline(executionId, cause),
      dropped: this.#ahead.dropPipeline(executionId),
    };
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
}
