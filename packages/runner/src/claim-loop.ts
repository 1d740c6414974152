import {
  BackgroundLoop,
  type ClaimedTask,
  type ClaimTasksRequest,
  type Clock,
  type ExecutionStore,
  type Logger,
} from '@orreryjs/core';
import type { ActiveTask, ActiveTasks } from './active-tasks.js';
import { type ClaimAlong, FinishWriter } from './finish-writer.js';
import type { WorkflowRegistry } from './registry.js';
import { type AttemptEnvironment, startAttempt } from './task-attempt.js';

/** Settings of {@link ClaimLoop}. */
export interface ClaimLoopOptions {
  store: ExecutionStore;
  registry: WorkflowRegistry;
  active: ActiveTasks;
  environment: AttemptEnvironment;
  runnerId: string;
  maxConcurrentTasks: number;
  taskLeaseMs: number;
  pollIntervalMs: number;
  clock: Clock;
  logger: Logger;
}

/**
 * Claims ready tasks of registered workflows in batches, up to the free slots of
 * `maxConcurrentTasks`, and starts them. Local events (a pipeline created, a task finished,
 * a retry due) wake it at once through `nudge()`; otherwise it polls every `pollIntervalMs`
 * for work other runners made ready.
 */
export class ClaimLoop extends BackgroundLoop {
  readonly #options: ClaimLoopOptions;
  /** The attempts' environment, committing their outcomes through one group-commit writer. */
  readonly #environment: AttemptEnvironment;
  /**
   * Attempts whose task code is over and whose outcome is being committed: they stay in
   * `active` (leases renewed, shutdown waits for them) but no longer take a slot, so the next
   * claim does not wait for the previous outcomes' commit.
   */
  readonly #committing = new Set<ActiveTask>();
  readonly #writer: FinishWriter;
  /** Slots promised to claims in flight (this loop's, or one riding along with outcomes). */
  #reserved = 0;
  /** The last claim along found work, or a claim found work while outcomes were committing (see {@link #ridesAlong}). */
  #workKeepsComing = true;
  /** A tick found every free slot promised to a claim in flight: it runs again once that claim is done. */
  #claimAgain = false;
  #nudgeQueued = false;
  /** The last claim filled every free slot, so more work may be waiting for the next free one. */
  #saturated = false;

  constructor(options: ClaimLoopOptions) {
    super({ name: 'task-claim', intervalMs: options.pollIntervalMs, logger: options.logger });
    this.#options = options;
    const writer = new FinishWriter(options.store, () => this.#claimAlong());
    this.#writer = writer;
    const committing = this.#committing;
    this.#environment = {
      ...options.environment,
      finish: (request) => writer.finish(request),
      outcomeReady: (entry) => {
        committing.add(entry);
        this.slotFreed();
      },
      slotFreed: (entry) => {
        // An attempt whose slot was already counted free while it committed frees nothing more.
        if (entry !== undefined && committing.delete(entry)) return;
        options.environment.slotFreed(entry);
      },
    };
  }

  /**
   * Wakes the loop on the next turn of the event loop. Nudges within one turn (a burst of
   * executeAsync calls, a batch of tasks finishing together) coalesce into one claim, so
   * claims come in batches instead of one transaction per task.
   */
  override nudge(): void {
    if (this.#nudgeQueued) return;
    this.#nudgeQueued = true;
    setImmediate(() => {
      this.#nudgeQueued = false;
      super.nudge();
    });
  }

  /**
   * A running attempt ended. Claims again at once only if the last claim filled every slot
   * (work may be waiting for one); otherwise new work arrives with its own nudge or the poll.
   */
  slotFreed(): void {
    if (this.#saturated) this.nudge();
  }

  /**
   * Wakes the loop at `atMs` on the runner's clock (when a retry's back-off ends). Only the
   * earliest such time is kept; later ones are found by the next tick or poll.
   */
  nudgeAt(atMs: number): void {
    this.wakeIn(atMs - this.#options.clock.now().getTime());
  }

  /** Slots neither running task code nor promised to a claim in flight. */
  #freeSlots(): number {
    const { active, maxConcurrentTasks } = this.#options;
    return maxConcurrentTasks - (active.size - this.#committing.size) - this.#reserved;
  }

  /** A claim for every free slot, their reservation held until `started` runs; null when none is free. */
  #reserveClaim(): { request: ClaimTasksRequest; started(tasks: readonly ClaimedTask[]): void } | null {
    const limit = this.#freeSlots();
    const registered = this.#options.registry.registeredTasks();
    if (limit <= 0 || registered.length === 0) return null;
    this.#reserved += limit;
    const request = {
      runnerId: this.#options.runnerId,
      registered,
      limit,
      leaseMs: this.#options.taskLeaseMs,
      now: this.#options.clock.now(),
    };
    return {
      request,
      started: (tasks) => {
        this.#reserved -= limit;
        this.#saturated = tasks.length === limit;
        if (this.#claimAgain) {
          this.#claimAgain = false;
          this.nudge();
        }
        // Started even if the loop is stopping: shutdown drains or releases them like any other running task.
        for (const task of tasks) startAttempt(task, this.#environment);
      },
    };
  }

  /**
   * Whether the next batch of outcomes takes a claim along, in its transaction. Yes for a worker
   * that keeps finding work as it finishes (one job at a time, end to end): it saves a commit
   * per task. No for a saturated one, which claims on its own in parallel with the outcomes'
   * commit (riding along would make each cycle wait for the previous one's commit), and no for
   * an idle one whose last claim along found nothing: the outcome commits alone, at once.
   */
  #ridesAlong(): boolean {
    return this.running && !this.#saturated && this.#workKeepsComing;
  }

  #claimAlong(): ClaimAlong | null {
    if (!this.#ridesAlong()) return null;
    const claim = this.#reserveClaim();
    if (claim === null) return null;
    return {
      request: claim.request,
      claimed: (tasks, failed) => {
        claim.started(tasks);
        this.#workKeepsComing = tasks.length > 0;
        // The write failed and claimed nothing: the loop claims on its own.
        if (failed) this.nudge();
      },
    };
  }

  protected async tick(signal: AbortSignal): Promise<void> {
    // Outcomes waiting for their write will claim along with it, in the same transaction.
    if (signal.aborted || (this.#writer.queued > 0 && this.#ridesAlong())) return;
    const claim = this.#reserveClaim();
    if (claim === null) {
      // Slots promised to a claim in flight, whose snapshot may predate the work that woke us: claim again after it.
      if (this.#reserved > 0) this.#claimAgain = true;
      else this.#saturated = this.#freeSlots() <= 0;
      return;
    }
    let claimed: ClaimedTask[] = [];
    // Work found while earlier tasks still commit: more is likely to be waiting when they are done.
    const busy = this.#committing.size > 0;
    try {
      claimed = await this.#options.store.claimTasks(claim.request);
    } finally {
      claim.started(claimed);
    }
    if (claimed.length > 0 && busy) this.#workKeepsComing = true;
  }
}
