import type {
  ClaimedTask,
  ClaimTasksRequest,
  ExecutionStore,
  FinishTaskRequest,
  FinishTaskResult,
} from '@orreryjs/core';

/** Most task outcomes committed in one transaction. */
export const MAX_FINISHES_PER_WRITE = 100;

/**
 * Writes in flight at once. Two, so that a busy worker's cycles overlap: while one batch of
 * outcomes (and the claim riding along) commits, the tasks of the previous claim finish and
 * their batch starts on a second connection. One would make every cycle wait for the last.
 */
export const MAX_WRITES_IN_FLIGHT = 2;

interface PendingFinish {
  request: FinishTaskRequest;
  resolve(result: FinishTaskResult): void;
  reject(error: unknown): void;
}

/**
 * A claim that rides along with a batch of outcomes, in their transaction. Its slots are
 * reserved from the moment it is asked for until `claimed` is called, with the tasks leased
 * (or none, when the transaction failed).
 */
export interface ClaimAlong {
  request: ClaimTasksRequest;
  claimed(tasks: readonly ClaimedTask[], failed: boolean): void;
}

/**
 * Group commit for task outcomes, as {@link PipelineWriter} is for `executeAsync`: outcomes
 * that end in one turn of the event loop are committed together, and outcomes that end while
 * {@link MAX_WRITES_IN_FLIGHT} commits are in flight are committed together by the next one,
 * in a single transaction (`ExecutionStore.finishTasks`). Ten tasks ending together pay one commit instead of ten.
 * When `claimAlong` offers a claim (free slots, the claim loop running), the same transaction
 * also leases the next tasks (`finishTasks`' `claim`): one commit per cycle of a busy worker
 * instead of two. Each outcome in a batch stays fenced on its own (lease owner, attempt): a
 * stale one is refused (`accepted: false`) without affecting the others. A batch that fails as
 * a whole (a value the database refuses, a lost connection) is retried one outcome at a time,
 * without a claim, so that only the bad one fails.
 */
export class FinishWriter {
  readonly #store: ExecutionStore;
  readonly #claimAlong: () => ClaimAlong | null;
  readonly #queue: PendingFinish[] = [];
  #inFlight = 0;

  constructor(store: ExecutionStore, claimAlong: () => ClaimAlong | null = () => null) {
    this.#store = store;
    this.#claimAlong = claimAlong;
  }

  /** Outcomes waiting for the next write (not those of the write in flight). */
  get queued(): number {
    return this.#queue.length;
  }

  /** Resolves once the outcome is committed (or refused by its fence). */
  finish(request: FinishTaskRequest): Promise<FinishTaskResult> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ request, resolve, reject });
      // The first outcome waits for the rest of this turn: tasks ending together share the write.
      if (this.#queue.length === 1) setImmediate(() => this.#drain());
    });
  }

  #drain(): void {
    while (this.#queue.length > 0 && this.#inFlight < MAX_WRITES_IN_FLIGHT) {
      this.#inFlight += 1;
      void this.#write(this.#queue.splice(0, MAX_FINISHES_PER_WRITE), true).finally(() => {
        this.#inFlight -= 1;
        this.#drain();
      });
    }
  }

  async #write(batch: PendingFinish[], withClaim: boolean): Promise<void> {
    const requests = batch.map((pending) => pending.request);
    const along = withClaim ? this.#claimAlong() : null;
    let results: FinishTaskResult[];
    try {
      const { finished, claimed } = await this.#store.finishTasks(
        requests,
        along === null ? {} : { claim: along.request },
      );
      results = finished;
      along?.claimed(claimed, false);
    } catch (error) {
      along?.claimed([], true);
      if (batch.length === 1 && along === null) {
        batch[0]!.reject(error);
        return;
      }
      // The transaction rolled back whole: each outcome can be committed alone. Together, so that a
      // database that is down fails them all at once rather than one after another.
      await Promise.all(batch.map((pending) => this.#write([pending], false)));
      return;
    }
    for (const [i, pending] of batch.entries()) pending.resolve(results[i]!);
  }
}
