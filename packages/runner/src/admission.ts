import { BackgroundLoop, type Clock, type ExecutionStore, type Logger, type PipelineRow } from '@orreryjs/core';

/**
 * How often a runner admits queued pipelines whatever happened: the safety net for a slot
 * freed by a process that died between ending a pipeline and admitting the next one. Every
 * slot this process frees is given on at once (see {@link GroupAdmission.freed}).
 */
export const ADMISSION_SWEEP_INTERVAL_MS = 5_000;

/**
 * Gives the slots of ended pipelines on: when a pipeline of concurrency groups ends here (its
 * last outcome, a cancel), the queued pipelines of its groups are admitted at once. Calls
 * that arrive while one admission runs are merged into the next, so a burst of finishes costs
 * a few transactions, not one each.
 */
export class GroupAdmission {
  readonly #store: ExecutionStore;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #pending = new Set<string>();
  #running: Promise<void> | null = null;

  constructor(store: ExecutionStore, clock: Clock, logger: Logger) {
    this.#store = store;
    this.#clock = clock;
    this.#logger = logger;
  }

  /** A pipeline ended or was cancelled here: admit the next of each of its groups (no-op without groups). */
  freed(row: PipelineRow): void {
    if (row.concurrency === null || row.concurrency.length === 0) return;
    for (const group of row.concurrency) this.#pending.add(group.group);
    this.#running ??= this.#drain();
  }

  /** Resolves once every slot freed so far has been given on (tests and shutdown). */
  async settled(): Promise<void> {
    while (this.#running !== null) await this.#running;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#pending.size > 0) {
        const groups = [...this.#pending];
        this.#pending = new Set();
        try {
          await this.#store.admitQueued(groups, this.#clock.now());
        } catch (error) {
          // The sweep admits them later: a freed slot is never lost, only late.
          this.#logger.warn({ err: error, groups }, 'admitting queued pipelines failed; the next sweep retries');
        }
      }
    } finally {
      this.#running = null;
    }
  }
}

/** Admits queued pipelines of every group every {@link ADMISSION_SWEEP_INTERVAL_MS}. */
export class AdmissionSweep extends BackgroundLoop {
  readonly #store: ExecutionStore;
  readonly #clock: Clock;

  constructor(store: ExecutionStore, clock: Clock, logger: Logger) {
    super({ name: 'admission', intervalMs: ADMISSION_SWEEP_INTERVAL_MS, logger });
    this.#store = store;
    this.#clock = clock;
  }

  protected async tick(): Promise<void> {
    await this.#store.admitQueued(null, this.#clock.now());
  }
}
