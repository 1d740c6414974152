import { BackgroundLoop, type Clock, type ExecutionStore, type Logger } from '@orreryjs/core';
import { type ActiveTasks, leaseOf } from './active-tasks.js';
import type { ClaimedAhead } from './claimed-ahead.js';

/** Settings of {@link LeaseLoop}. */
export interface LeaseLoopOptions {
  store: ExecutionStore;
  active: ActiveTasks;
  /** Tasks claimed ahead of a free slot: leased too, renewed with the running ones. */
  ahead: ClaimedAhead;
  runnerId: string;
  taskLeaseMs: number;
  clock: Clock;
  logger: Logger;
}

/**
 * Renews the leases of every task this process runs or claimed ahead, together, every third of `taskLeaseMs`.
 * A task whose lease was not renewed (another runner took it over, or a cancel or pause
 * requeued it) or ran out while the database was unreachable has its signal aborted: its
 * outcome could no longer be committed.
 */
export class LeaseLoop extends BackgroundLoop {
  readonly #options: LeaseLoopOptions;

  constructor(options: LeaseLoopOptions) {
    super({
      name: 'lease-renewal',
      intervalMs: Math.max(1, Math.floor(options.taskLeaseMs / 3)),
      // A failing renewal must be retried well within the lease, not after a long back-off.
      maxBackoffMs: Math.max(1, Math.floor(options.taskLeaseMs / 3)),
      logger: options.logger,
    });
    this.#options = options;
  }

  protected async tick(): Promise<void> {
    const { active, ahead, store, runnerId, taskLeaseMs, clock } = this.#options;
    const tasks = active.list();
    const waiting = ahead.leases();
    if (tasks.length === 0 && waiting.length === 0) return;
    try {
      const now = clock.now();
      // Two statements: only the running attempts' renewal records the start of those claimed ahead.
      const [running, stillWaiting] = await Promise.all([
        store.renewLeases(runnerId, tasks.map(leaseOf), taskLeaseMs, now, { started: true }),
        store.renewLeases(runnerId, waiting, taskLeaseMs, now),
      ]);
      const held = new Set([...running, ...stillWaiting]);
      ahead.renewed(waiting, held, new Date(now.getTime() + taskLeaseMs));
      for (const task of tasks) {
        if (held.has(task.taskExecutionId)) task.leaseExpiresAtMs = now.getTime() + taskLeaseMs;
        // An attempt that committed while the renewal ran no longer holds a lease, rightly: leave it be.
        else if (active.has(task)) active.abort(task, 'lease_lost');
      }
    } finally {
      // Renewal failed or is late: a lease past its expiry may already belong to another runner.
      const nowMs = clock.now().getTime();
      for (const task of active.list()) if (task.leaseExpiresAtMs <= nowMs) active.abort(task, 'lease_lost');
    }
  }
}
