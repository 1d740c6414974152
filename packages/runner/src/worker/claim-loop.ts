import {
  BackgroundLoop,
  type ClaimedTask,
  type ClaimTasksRequest,
  type Clock,
  type ExecutionStore,
  type Logger,
} from '@orreryjs/core';
import type { WorkflowRegistry } from '../registry.js';
import type { ActiveTask, ActiveTasks } from './active-tasks.js';
import type { ClaimedAhead } from './claimed-ahead.js';
import { type ClaimAlong, FinishWriter } from './finish-writer.js';
import { type AttemptEnvironment, startAttempt } from './task-attempt.js';

/** Settings of {@link ClaimLoop}. */
export interface ClaimLoopOptions {
  store: ExecutionStore;
  registry: WorkflowRegistry;
  active: ActiveTasks;
  /** Tasks claimed ahead of a free slot; shared with the lease loop, which renews them. */
  ahead: ClaimedAhead;
  environment: AttemptEnvironment;
  runnerId: string;
  maxConcurrentTasks: number;
  taskLeaseMs: number;
  pollIntervalMs: number;
  clock: Clock;
  logger: Logger;
}

/**
 * A busy worker claims up to this many times `maxConcurrentTasks` tasks ahead of its free slots
 * (see {@link ClaimLoop}). Two: alternated on a backlog of no-op jobs, one drained it 4-25 %
 * slower and three no faster (figures in bench/README.md).
 */
export const CLAIM_AHEAD_FACTOR = 2;

/**
 * A worker claims ahead only while its attempts' code ends within this many ms: then a task
 * waits for a slot about as long as a claim's round trip. Longer tasks would hold claimed work
 * back from other runners for as long as they run, and gain nothing (a claim is small next to them).
 */
export const CLAIM_AHEAD_MAX_TASK_MS = 10;

/**
 * Claims ready tasks of registered workflows in batches, up to the free slots of
 * `maxConcurrentTasks`, and starts them. Local events (a pipeline created, a task finished,
 * a retry due) wake it at once through `nudge()`; otherwise it polls every `pollIntervalMs`
 * for work other runners made ready.
 *
 * Claim ahead: a saturated worker whose tasks are short (under {@link CLAIM_AHEAD_MAX_TASK_MS})
 * also claims up to {@link CLAIM_AHEAD_FACTOR} × `maxConcurrentTasks` tasks for slots that are
 * not free yet. They wait, leased, in {@link ClaimedAhead} and start the moment a slot frees,
 * while the next claim is in flight; otherwise every slot would sit idle for a claim's round
 * trip each cycle. `maxConcurrentTasks` still bounds the task code running at once.
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
  /** Slots of claims in flight promised to {@link ClaimedAhead}, not to free slots. */
  #reservedAhead = 0;
  /** The last attempt's code ended within {@link CLAIM_AHEAD_MAX_TASK_MS}. */
  #tasksAreShort = false;

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
        this.#tasksAreShort = performance.now() - entry.startedAtMs <= CLAIM_AHEAD_MAX_TASK_MS;
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
    this.#startWaiting();
    if (this.#saturated) this.nudge();
  }

  /** Starts tasks claimed ahead in the free slots. */
  #startWaiting(): void {
    const { ahead, clock } = this.#options;
    if (ahead.size === 0) return;
    const nowMs = clock.now().getTime();
    while (this.#freeSlots() > 0) {
      const claimed = ahead.take(nowMs);
      if (claimed === undefined) return;
      startAttempt(claimed, this.#environment);
    }
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

  /** Tasks the next claim takes ahead of a free slot: none unless the worker is saturated with short tasks. */
  #aheadRoom(): number {
    if (!this.#saturated || !this.#tasksAreShort) return 0;
    const { ahead, maxConcurrentTasks } = this.#options;
    return Math.max(0, CLAIM_AHEAD_FACTOR * maxConcurrentTasks - ahead.size - this.#reservedAhead);
  }

  /**
   * A claim for every free slot (and, for a busy worker, ahead of them), their reservation held
   * until `started` runs; null when no slot is free once the tasks claimed ahead have started.
   */
  #reserveClaim(): { request: ClaimTasksRequest; started(tasks: readonly ClaimedTask[]): void } | null {
    this.#startWaiting();
    const free = this.#freeSlots();
    const registered = this.#options.registry.registeredTasks();
    if (free <= 0 || registered.length === 0) return null;
    const aheadRoom = this.#aheadRoom();
    const limit = free + aheadRoom;
    this.#reserved += free;
    this.#reservedAhead += aheadRoom;
    const request = {
      runnerId: this.#options.runnerId,
      registered,
      limit,
      // The tasks for the free slots start at once; those taken ahead are leased but not started.
      startNow: free,
      leaseMs: this.#options.taskLeaseMs,
      now: this.#options.clock.now(),
    };
    return {
      request,
      started: (tasks) => {
        this.#reserved -= free;
        this.#reservedAhead -= aheadRoom;
        this.#saturated = tasks.length === limit;
        if (this.#claimAgain) {
          this.#claimAgain = false;
          this.nudge();
        }
        // Even if the loop is stopping: shutdown waits for them to start and end, or releases them, like running tasks.
        // Those the claim recorded as started take the slots reserved for them now, ahead of any waiting task:
        // a crash from here on charges them an attempt, so their code must not wait behind another's.
        const waiting: ClaimedTask[] = [];
        for (const claimed of tasks) {
          if (claimed.task.startedAt === null) waiting.push(claimed);
          else startAttempt(claimed, this.#environment);
        }
        this.#options.ahead.push(waiting);
        this.#startWaiting();
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
