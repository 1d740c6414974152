import {
  BackgroundLoop,
  type ClaimedTask,
  type ClaimTasksRequest,
  type Clock,
  type ExecutionStore,
  type FinishTaskRequest,
  type FinishTaskResult,
  type Logger,
} from '@orreryjs/core';
import type { WorkflowRegistry } from '../registry.js';
import type { ActiveTask, ActiveTasks } from './active-tasks.js';
import type { ClaimedAhead } from './claimed-ahead.js';
import { type ClaimAlong, FinishWriter } from './finish-writer.js';

/** Settings of {@link ClaimLoop}. */
export interface ClaimLoopOptions {
  store: ExecutionStore;
  registry: WorkflowRegistry;
  active: ActiveTasks;
  /** Tasks claimed ahead of a free slot; shared with the lease loop, which renews them. */
  ahead: ClaimedAhead;
  /** Starts an attempt of a claimed task (the worker's `startAttempt`, whose outcome comes back through {@link ClaimLoop.commit}). */
  startAttempt(claimed: ClaimedTask): void;
  runnerId: string;
  maxConcurrentTasks: number;
  taskLeaseMs: number;
  pollIntervalMs: number;
  /** {@link OUTRUN_PAUSE_MS} unless a test sets another. */
  outrunPauseMs?: number;
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
 * After claiming for another process's wake-up and finding nothing (a quicker runner took the
 * work), a worker leaves the next wake-ups to the others for this many ms, then claims once for
 * those that came meanwhile. Every runner hears every notification (NOTIFY has no addressee),
 * so without it P runners make P − 1 empty claims per task while one of them keeps up, and the
 * busy one's outcomes no longer ride together: with a producer starting one pipeline at a time,
 * 2 worker processes did 532 jobs/s against one's 1,014, and 730, 811 and 951 with 10, 20 and
 * 50 ms here (bench/README.md). A runner whose claims find work answers every wake-up at once,
 * so a start waits for this only while every runner has just lost such a race.
 */
export const OUTRUN_PAUSE_MS = 50;

/**
 * How the claim loop claims, from what its last claims found:
 * - `ridingAlong`: work keeps coming as tasks finish (one job at a time, end to end): each batch
 *   of outcomes takes the next claim along, in its transaction, saving a commit per task.
 * - `saturated`: the last claim filled every free slot. The loop claims on its own as slots free,
 *   in parallel with the outcomes' commits (riding along would make each cycle wait for the
 *   previous one's commit), and, while tasks are short, ahead of its free slots.
 * - `idle`: the last claim along found nothing. Outcomes commit alone, at once; new work arrives
 *   with its own nudge (a pipeline created here, a wake-up) or the poll. But outcomes that may
 *   ready their dependents take the claim along: the dependents then start with the outcome's
 *   commit, not with a claim after it (a DAG's next task, a signalled wait task's successor).
 */
export type ClaimMode = 'ridingAlong' | 'saturated' | 'idle';

/** A claim's slots, held from the moment it is made until its tasks are handed out. */
interface Reservation {
  request: ClaimTasksRequest;
  /** Hands out the tasks the claim leased (none when it `failed`) and gives the slots back. */
  claimed(tasks: readonly ClaimedTask[], failed: boolean): void;
}

/**
 * Claims ready tasks of registered workflows in batches, up to the free slots of
 * `maxConcurrentTasks`, starts them, and commits their outcomes in groups (a {@link FinishWriter}
 * it drives). Local events (a pipeline created, a task finished, a retry due) wake it at once
 * through `nudge()`; otherwise it polls every `pollIntervalMs` for work other runners made ready.
 *
 * Claim ahead: a saturated worker whose tasks are short (under {@link CLAIM_AHEAD_MAX_TASK_MS})
 * also claims up to {@link CLAIM_AHEAD_FACTOR} × `maxConcurrentTasks` tasks for slots that are
 * not free yet. They wait, leased, in {@link ClaimedAhead} and start the moment a slot frees,
 * while the next claim is in flight; otherwise every slot would sit idle for a claim's round
 * trip each cycle. `maxConcurrentTasks` still bounds the task code running at once.
 */
export class ClaimLoop extends BackgroundLoop {
  readonly #options: ClaimLoopOptions;
  readonly #writer: FinishWriter;
  /**
   * Attempts whose task code is over and whose outcome is being committed: they stay in
   * `active` (leases renewed, shutdown waits for them) but no longer take a slot, so the next
   * claim does not wait for the previous outcomes' commit.
   */
  readonly #committing = new Set<ActiveTask>();
  /** Slots promised to claims in flight (this loop's, or one riding along with outcomes), for free slots and ahead of them. */
  readonly #reserved = { slots: 0, ahead: 0 };
  /** The last claim filled every free slot, so more work may be waiting for the next free one. */
  #saturated = false;
  /**
   * The last claim along found work, or a claim found work while outcomes were committing: the
   * worker's mode, once it is not saturated (see {@link mode}).
   */
  #workKeepsComing = true;
  /** A tick found every free slot promised to a claim in flight: it runs again once that claim is done. */
  #claimAgain = false;
  #nudgeQueued = false;
  /** The last attempt's code ended within {@link CLAIM_AHEAD_MAX_TASK_MS}. */
  #tasksAreShort = false;
  /** Another process's wake-up came since the loop's last claim: the next claim answers it. */
  #answersWakeUp = false;
  /** `performance.now()` when a claim answering another process's wake-up last found nothing. */
  #outrunAtMs = Number.NEGATIVE_INFINITY;

  constructor(options: ClaimLoopOptions) {
    super({ name: 'task-claim', intervalMs: options.pollIntervalMs, logger: options.logger });
    this.#options = options;
    this.#writer = new FinishWriter(options.store);
  }

  /** How the loop claims now (see {@link ClaimMode}). */
  get mode(): ClaimMode {
    if (this.#saturated) return 'saturated';
    return this.#workKeepsComing ? 'ridingAlong' : 'idle';
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
   * Wakes the loop at `atMs` on the runner's clock (when a retry's back-off ends). Only the
   * earliest such time is kept; later ones are found by the next tick or poll.
   */
  nudgeAt(atMs: number): void {
    this.wakeIn(atMs - this.#options.clock.now().getTime());
  }

  /**
   * Another process committed tasks ready at `availableAtMs` on the runner's clock: claims when
   * they are (the writer's clock may be a few ms ahead, clock offsets being measured per
   * process), or once {@link OUTRUN_PAUSE_MS} has passed since a claim answering such a
   * wake-up last found nothing.
   */
  wakeUp(availableAtMs: number): void {
    this.#answersWakeUp = true;
    const pauseEndsInMs = this.#outrunAtMs + (this.#options.outrunPauseMs ?? OUTRUN_PAUSE_MS) - performance.now();
    const inMs = Math.max(availableAtMs - this.#options.clock.now().getTime(), pauseEndsInMs);
    if (inMs > 0) this.wakeIn(inMs);
    // At once, not on the next turn as local nudges are: the work is committed already, and the
    // wake-ups of one network read all arrive before the claim starts (it starts in a microtask).
    else super.nudge();
  }

  /**
   * Commits an attempt's outcome together with the others that end in the same turn of the
   * event loop (or while {@link MAX_WRITES_IN_FLIGHT} writes are in flight); riding along, the
   * write also claims the next tasks. Resolves once committed (or refused by its fence).
   */
  commit(request: FinishTaskRequest): Promise<FinishTaskResult> {
    const committed = this.#writer.enqueue(request);
    // The first outcome waits for the rest of this turn: tasks ending together share the write.
    if (this.#writer.queued === 1) setImmediate(() => this.#writeOutcomes());
    return committed;
  }

  /**
   * An attempt's task code is over and only its outcome's commit is pending: its slot counts
   * as free already, so that claiming the next tasks overlaps that commit.
   */
  outcomeReady(entry: ActiveTask): void {
    this.#tasksAreShort = performance.now() - entry.startedAtMs <= CLAIM_AHEAD_MAX_TASK_MS;
    this.#committing.add(entry);
    this.slotFreed();
  }

  /**
   * An attempt ended (`entry`), or a slot freed otherwise: starts a task claimed ahead in it, and
   * claims again at once only if the last claim filled every slot (work may be waiting for one);
   * otherwise new work arrives with its own nudge or the poll.
   */
  slotFreed(entry?: ActiveTask): void {
    // An attempt whose slot was already counted free while it committed frees nothing more.
    if (entry !== undefined && this.#committing.delete(entry)) return;
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
      this.#options.startAttempt(claimed);
    }
  }

  /** Slots neither running task code nor promised to a claim in flight. */
  #freeSlots(): number {
    const { active, maxConcurrentTasks } = this.#options;
    return maxConcurrentTasks - (active.size - this.#committing.size) - this.#reserved.slots;
  }

  /** Tasks the next claim takes ahead of a free slot: none unless the worker is saturated with short tasks. */
  #aheadRoom(): number {
    if (this.mode !== 'saturated' || !this.#tasksAreShort) return 0;
    const { ahead, maxConcurrentTasks } = this.#options;
    return Math.max(0, CLAIM_AHEAD_FACTOR * maxConcurrentTasks - ahead.size - this.#reserved.ahead);
  }

  /**
   * A claim for every free slot (and, for a saturated worker, ahead of them), its slots reserved
   * until its tasks are handed out; null when no slot is free once the tasks claimed ahead have started.
   */
  #reserve(): Reservation | null {
    this.#startWaiting();
    const free = this.#freeSlots();
    const registered = this.#options.registry.registeredTasks();
    if (free <= 0 || registered.length === 0) return null;
    const aheadRoom = this.#aheadRoom();
    const limit = free + aheadRoom;
    this.#reserved.slots += free;
    this.#reserved.ahead += aheadRoom;
    // Sent after the wake-up came, this claim (the loop's own or one along) answers it.
    const answersWakeUp = this.#answersWakeUp;
    this.#answersWakeUp = false;
    const reservedAtMs = performance.now();
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
      claimed: (tasks, failed) => {
        this.#reserved.slots -= free;
        this.#reserved.ahead -= aheadRoom;
        this.#saturated = tasks.length === limit;
        if (answersWakeUp && !failed && tasks.length === 0) this.#outrunAtMs = reservedAtMs;
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
          else this.#options.startAttempt(claimed);
        }
        this.#options.ahead.push(waiting);
        this.#startWaiting();
      },
    };
  }

  /** Starts the writes the queued outcomes can take, each with a claim along while the loop rides along. */
  #writeOutcomes(): void {
    while (this.#writer.canWrite) {
      void this.#writer.writeNext(this.#claimAlong()).finally(() => this.#writeOutcomes());
    }
  }

  /** Whether the next write of outcomes takes a claim along (see {@link ClaimMode}). */
  #nextWriteClaims(): boolean {
    const mode = this.mode;
    return mode === 'ridingAlong' || (mode === 'idle' && this.#writer.nextMayReady);
  }

  #claimAlong(): ClaimAlong | null {
    if (!this.running || !this.#nextWriteClaims()) return null;
    const reservation = this.#reserve();
    if (reservation === null) return null;
    return {
      request: reservation.request,
      claimed: (tasks, failed) => {
        reservation.claimed(tasks, failed);
        this.#workKeepsComing = tasks.length > 0;
        // The write failed and claimed nothing: the loop claims on its own.
        if (failed) this.nudge();
      },
    };
  }

  protected async tick(signal: AbortSignal): Promise<void> {
    // Outcomes waiting for their write will claim along with it, in the same transaction: a claim
    // here would take the free slots first, and the dependents they ready would wait for a claim after it.
    if (signal.aborted || (this.#writer.queued > 0 && this.#nextWriteClaims())) return;
    const reservation = this.#reserve();
    if (reservation === null) {
      // Slots promised to a claim in flight, whose snapshot may predate the work that woke us: claim again after it.
      if (this.#reserved.slots > 0) this.#claimAgain = true;
      else this.#saturated = this.#freeSlots() <= 0;
      return;
    }
    let claimed: ClaimedTask[] = [];
    // Work found while earlier tasks still commit: more is likely to be waiting when they are done.
    const busy = this.#committing.size > 0;
    let failed = true;
    try {
      claimed = await this.#options.store.claimTasks(reservation.request);
      failed = false;
    } finally {
      reservation.claimed(claimed, failed);
    }
    if (claimed.length > 0 && busy) this.#workKeepsComing = true;
  }
}
