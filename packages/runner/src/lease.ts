import { BackgroundLoop, type Clock, type ExecutionStore, type Logger } from '@orreryjs/core';
import { type ActiveTasks, leaseOf } from './active-tasks.js';

/** Settings of {@link LeaseLoop}. */
export interface LeaseLoopOptions {
  store: ExecutionStore;
  active: ActiveTasks;
  runnerId: string;
  taskLeaseMs: number;
  clock: Clock;
  logger: Logger;
}

/**
 * Renews the leases of every task this process runs, together, every third of `taskLeaseMs`.
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
    const { active, store, runnerId, taskLeaseMs, clock } = this.#options;
    const tasks = active.list();
    if (tasks.length === 0) return;
    try {
      const now = clock.now();
      const leases = tasks.map(leaseOf);
      const held = new Set(await store.renewLeases(runnerId, leases, taskLeaseMs, now));
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
