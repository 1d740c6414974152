import type { ExecutionStore, FinishTaskRequest, FinishTaskResult } from '@orreryjs/core';

/** Most task outcomes committed in one transaction. */
export const MAX_FINISHES_PER_WRITE = 100;

interface PendingFinish {
  request: FinishTaskRequest;
  resolve(result: FinishTaskResult): void;
  reject(error: unknown): void;
}

/**
 * Group commit for task outcomes, as {@link PipelineWriter} is for `executeAsync`: the first
 * outcome is committed at once; outcomes that end while that commit is in flight are committed
 * together by the next one, in a single transaction (`ExecutionStore.finishTasks`). A lone
 * task waits no longer than before; ten tasks ending together pay one commit instead of ten.
 * Each outcome in a batch stays fenced on its own (lease owner, attempt): a stale one is
 * refused (`accepted: false`) without affecting the others. A batch that fails as a whole (a
 * value the database refuses, a lost connection) is retried one outcome at a time, so that
 * only the bad one fails.
 */
export class FinishWriter {
  readonly #store: ExecutionStore;
  readonly #queue: PendingFinish[] = [];
  #writing = false;

  constructor(store: ExecutionStore) {
    this.#store = store;
  }

  /** Resolves once the outcome is committed (or refused by its fence). */
  finish(request: FinishTaskRequest): Promise<FinishTaskResult> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ request, resolve, reject });
      void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    if (this.#writing) return;
    this.#writing = true;
    try {
      while (this.#queue.length > 0) await this.#write(this.#queue.splice(0, MAX_FINISHES_PER_WRITE));
    } finally {
      this.#writing = false;
    }
  }

  async #write(batch: PendingFinish[]): Promise<void> {
    try {
      const results = await this.#store.finishTasks(batch.map((pending) => pending.request));
      for (const [i, pending] of batch.entries()) pending.resolve(results[i]!);
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      // The transaction rolled back whole: each outcome can be committed alone. Together, so that a
      // database that is down fails them all at once rather than one after another.
      await Promise.all(batch.map((pending) => this.#write([pending])));
    }
  }
}
