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
 * reserved from the moment it is made until `claimed` is called, with the tasks leased (or
 * none, when the transaction failed), before the outcomes' callers hear of their commit.
 */
export interface ClaimAlong {
  request: ClaimTasksRequest;
  claimed(tasks: readonly ClaimedTask[], failed: boolean): void;
}

/**
 * Group commit for task outcomes, as {@link PipelineWriter} is for `executeAsync`: outcomes
 * queued together are committed together, in a single transaction (`ExecutionStore.finishTasks`);
 * ten tasks ending together pay one commit instead of ten. A write may carry a claim along
 * (`finishTasks`' `claim`), so that a busy worker pays one commit per cycle instead of two.
 *
 * The writer is driven by its owner (the claim loop), which decides when to write and whether
 * a claim rides along; the writer only commits and answers. Each outcome in a batch stays fenced
 * on its own (lease owner, attempt): a stale one is refused (`accepted: false`) without
 * affecting the others. A batch that fails as a whole (a value the database refuses, a lost
 * connection) is retried one outcome at a time, without a claim, so that only the bad one fails.
 */
export class FinishWriter {
  readonly #store: ExecutionStore;
  readonly #queue: PendingFinish[] = [];
  #inFlight = 0;

  constructor(store: ExecutionStore) {
    this.#store = store;
  }

  /** Outcomes waiting for the next write (not those of the writes in flight). */
  get queued(): number {
    return this.#queue.length;
  }

  /** Outcomes are waiting and fewer than {@link MAX_WRITES_IN_FLIGHT} writes are in flight. */
  get canWrite(): boolean {
    return this.#queue.length > 0 && this.#inFlight < MAX_WRITES_IN_FLIGHT;
  }

  /**
   * The next write holds an outcome that may ready tasks: a terminal one of a task with
   * dependents (each is readied once its last dependency ends).
   */
  get nextMayReady(): boolean {
    return this.#queue
      .slice(0, MAX_FINISHES_PER_WRITE)
      .some(({ request }) => request.outcome.status !== 'retry' && request.dependents.length > 0);
  }

  /** Queues an outcome for the next write; resolves once it is committed (or refused by its fence). */
  enqueue(request: FinishTaskRequest): Promise<FinishTaskResult> {
    return new Promise((resolve, reject) => this.#queue.push({ request, resolve, reject }));
  }

  /**
   * Commits the next {@link MAX_FINISHES_PER_WRITE} queued outcomes, with `along` in the same
   * transaction. Settles once they are answered; never rejects (a failed outcome rejects its
   * own caller).
   */
  async writeNext(along: ClaimAlong | null): Promise<void> {
    this.#inFlight += 1;
    try {
      await this.#write(this.#queue.splice(0, MAX_FINISHES_PER_WRITE), along);
    } finally {
      this.#inFlight -= 1;
    }
  }

  async #write(batch: PendingFinish[], along: ClaimAlong | null): Promise<void> {
    const requests = batch.map((pending) => pending.request);
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
      await Promise.all(batch.map((pending) => this.#write([pending], null)));
      return;
    }
    for (const [i, pending] of batch.entries()) pending.resolve(results[i]!);
  }
}
