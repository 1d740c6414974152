import { type ClaimedTask, type LeaseRef, leaseOfTask } from '@orreryjs/core';

/**
 * Tasks a busy worker claimed ahead of a free slot, waiting to start (first in, first out).
 * Claiming ahead lets the next claim's round trip overlap the tasks that run now, instead of
 * each cycle waiting for it (see `ClaimLoop`). A waiting task is leased like a running one:
 * the lease loop renews it ({@link leases}, {@link renewed}), a cancel or pause drops it
 * ({@link dropPipeline}), and shutdown waits for it to start and end, or gives it back with
 * the running tasks' leases ({@link drain}) when its timeout is up.
 */
export class ClaimedAhead {
  /** By task execution id, in claim order. */
  readonly #waiting = new Map<string, ClaimedTask>();

  /** Tasks waiting for a slot. */
  get size(): number {
    return this.#waiting.size;
  }

  /** Adds tasks just claimed, behind those already waiting. */
  push(tasks: readonly ClaimedTask[]): void {
    for (const claimed of tasks) this.#waiting.set(claimed.task.id, claimed);
  }

  /**
   * The oldest waiting task whose lease still runs at `nowMs`; undefined when none is left.
   * A task whose lease ran out (renewals failed for a whole lease) is dropped: another runner
   * may have taken it over already.
   */
  take(nowMs: number): ClaimedTask | undefined {
    for (const [id, claimed] of this.#waiting) {
      this.#waiting.delete(id);
      if ((claimed.task.leaseExpiresAt?.getTime() ?? 0) > nowMs) return claimed;
    }
    return undefined;
  }

  /** Leases of every waiting task, for the lease loop to renew. */
  leases(): LeaseRef[] {
    return [...this.#waiting.values()].map((claimed) => leaseOfTask(claimed.task));
  }

  /**
   * Records a renewal of `sent` (what {@link leases} returned when it started): those in `held`
   * hold their lease until `expiresAt`; the others lost it (a cancel, a pause or another runner
   * rewrote the row) and are dropped. Tasks claimed or started since are left alone.
   */
  renewed(sent: readonly LeaseRef[], held: ReadonlySet<string>, expiresAt: Date): void {
    for (const { taskExecutionId: id, attempt } of sent) {
      const claimed = this.#waiting.get(id);
      if (claimed === undefined || claimed.task.attempt !== attempt) continue;
      if (held.has(id)) claimed.task = { ...claimed.task, leaseExpiresAt: expiresAt };
      else this.#waiting.delete(id);
    }
  }

  /** The pipelines of the waiting tasks. */
  pipelineIds(): Set<string> {
    return new Set([...this.#waiting.values()].map((claimed) => claimed.pipeline.id));
  }

  /** Drops the waiting tasks of one pipeline (cancelled or paused: their rows were already rewritten); returns how many. */
  dropPipeline(pipelineExecutionId: string): number {
    let dropped = 0;
    for (const [id, claimed] of this.#waiting) {
      if (claimed.pipeline.id !== pipelineExecutionId) continue;
      this.#waiting.delete(id);
      dropped += 1;
    }
    return dropped;
  }

  /** Empties the queue; returns the leases to give back. */
  drain(): LeaseRef[] {
    const leases = this.leases();
    this.#waiting.clear();
    return leases;
  }
}
