import type { ExecutionStore, NewPipeline, PipelineRow } from '@orreryjs/core';

/** Most pipelines written in one transaction. */
export const MAX_PIPELINES_PER_WRITE = 100;

interface PendingWrite {
  pipeline: NewPipeline;
  resolve(result: { pipeline: PipelineRow; created: boolean }): void;
  reject(error: unknown): void;
}

/**
 * Group commit for `executeAsync`: the first pipeline is written at once; pipelines asked
 * for while that write is in flight are written together by the next one, in a single
 * transaction. A lone caller waits no longer than before, and many concurrent callers pay
 * one commit per batch instead of one each. A batch is one transaction, so one bad request
 * (a value the database refuses) rolls back the whole batch: the writer then writes each of its
 * requests on its own, so that only the bad one fails and the unrelated ones still commit.
 */
export class PipelineWriter {
  readonly #store: ExecutionStore;
  readonly #queue: PendingWrite[] = [];
  #writing = false;

  constructor(store: ExecutionStore) {
    this.#store = store;
  }

  /** Resolves once the pipeline and its task rows are committed (or its key's holder is found). */
  create(pipeline: NewPipeline): Promise<{ pipeline: PipelineRow; created: boolean }> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ pipeline, resolve, reject });
      void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    if (this.#writing) return;
    this.#writing = true;
    try {
      while (this.#queue.length > 0) await this.#write(this.#queue.splice(0, MAX_PIPELINES_PER_WRITE));
    } finally {
      this.#writing = false;
    }
  }

  async #write(batch: PendingWrite[]): Promise<void> {
    try {
      const results = await this.#store.createPipelines(batch.map((write) => write.pipeline));
      for (const [i, write] of batch.entries()) write.resolve(results[i]!);
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      // The transaction rolled back whole: nothing of the batch is written, so each request can be
      // tried alone. Together, not one after another: when the database is down, all fail at once.
      await Promise.all(batch.map((write) => this.#write([write])));
    }
  }
}
