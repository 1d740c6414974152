import type { DashboardClient } from './client.js';

/** How often the change watcher reads the database while someone listens. */
export const WATCH_INTERVAL_MS = 1000;

/**
 * Watches the database for changes an open page should show (a new ledger row or execution,
 * a status change) and tells every subscriber. The client may live in another process than
 * the runners, so this reads a small fingerprint (the newest executions and the 24-hour cron
 * counts) once per interval, and only while at least one page listens.
 */
export class ChangeWatcher {
  readonly #client: DashboardClient;
  readonly #listeners = new Set<() => void>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #fingerprint: string | undefined;

  constructor(client: DashboardClient) {
    this.#client = client;
  }

  /** Calls `listener` on every change; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    if (this.#timer === undefined) this.#schedule();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0 && this.#timer !== undefined) {
        clearTimeout(this.#timer);
        this.#timer = undefined;
        this.#fingerprint = undefined;
      }
    };
  }

  #schedule(): void {
    this.#timer = setTimeout(() => void this.#tick(), WATCH_INTERVAL_MS);
    this.#timer.unref?.();
  }

  async #tick(): Promise<void> {
    this.#timer = undefined;
    try {
      const [executions, stats] = await Promise.all([
        this.#client.listExecutions({ limit: 20 }),
        this.#client.getCronExecutionStats(),
      ]);
      const next = JSON.stringify([executions.map((e) => [e.executionId, e.status]), stats]);
      if (this.#fingerprint !== undefined && next !== this.#fingerprint) for (const l of this.#listeners) l();
      this.#fingerprint = next;
    } catch {
      // A failed read (database restarting, client closed) only delays the next update.
    }
    if (this.#listeners.size > 0 && this.#timer === undefined) this.#schedule();
  }
}
