import { BackgroundLoop, type Clock, type ExecutionStore, type Logger } from '@orreryjs/core';
import type { ActiveTask, ActiveTasks } from './active-tasks.js';
import { FinishWriter } from './finish-writer.js';
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
  #nudgeQueued = false;
  /** The last claim filled every free slot, so more work may be waiting for the next free one. */
  #saturated = false;

  constructor(options: ClaimLoopOptions) {
    super({ name: 'task-claim', intervalMs: options.pollIntervalMs, logger: options.logger });
    this.#options = options;
    const writer = new FinishWriter(options.store);
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

  protected async tick(signal: AbortSignal): Promise<void> {
    const { active, registry, store, maxConcurrentTasks } = this.#options;
    const free = maxConcurrentTasks - (active.size - this.#committing.size);
    if (free <= 0 || signal.aborted) {
      this.#saturated = free <= 0;
      return;
    }
    const registered = registry.registeredTasks();
    if (registered.length === 0) return;
    const claimed = await store.claimTasks({
      runnerId: this.#options.runnerId,
      registered,
      limit: free,
      leaseMs: this.#options.taskLeaseMs,
      now: this.#options.clock.now(),
    });
    this.#saturated = claimed.length === free;
    // Claimed even if the loop is stopping: shutdown drains or releases them like any other running task.
    for (const task of claimed) startAttempt(task, this.#environment);
  }
}
