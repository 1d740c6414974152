import type { ExecutionStore, RateLimitedStart, RateLimitedStartResult } from '@orreryjs/core';

/**
 * Batches the rate-limit starts of attempts that begin together (a claim starts several at
 * once) into one `startRateLimited` call: one transaction per batch instead of one per start,
 * so that a bucket is counted as fast as a claim hands tasks out. A batch is sent on the next
 * turn of the event loop; batches may overlap (the database serialises them per bucket).
 */
export class RateGate {
  readonly #store: ExecutionStore;
  #waiting: Array<{
    request: RateLimitedStart;
    resolve(result: RateLimitedStartResult): void;
    reject(error: unknown): void;
  }> = [];

  constructor(store: ExecutionStore) {
    this.#store = store;
  }

  /** Counts this attempt's start, or gives its task back (see ExecutionStore.startRateLimited). */
  start(request: RateLimitedStart): Promise<RateLimitedStartResult> {
    return new Promise((resolve, reject) => {
      if (this.#waiting.length === 0) setImmediate(() => void this.#send());
      this.#waiting.push({ request, resolve, reject });
    });
  }

  async #send(): Promise<void> {
    const batch = this.#waiting;
    this.#waiting = [];
    try {
      const results = await this.#store.startRateLimited(batch.map((entry) => entry.request));
      for (const [index, entry] of batch.entries()) entry.resolve(results[index]!);
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }
}
