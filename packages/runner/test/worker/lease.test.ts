import { DatabaseError, type ExecutionStore, leaseOfTask, ManualClock, newId, silentLogger } from '@orreryjs/core';
import { afterEach, describe, expect, it } from 'vitest';
import { tempSqliteStorage } from '../../../../test/support/sqlite.js';
import { type ActiveTask, ActiveTasks } from '../../src/worker/active-tasks.js';
import { ClaimedAhead } from '../../src/worker/claimed-ahead.js';
import { LeaseLoop } from '../../src/worker/lease.js';
import { claimedOneTaskPipelines, waitFor } from '../support.js';

const LEASE_MS = 60;
const T0 = new Date('2026-01-01T00:00:00.000Z');

function runningTask(leaseExpiresAtMs: number): ActiveTask {
  return {
    taskExecutionId: newId(),
    pipelineExecutionId: newId(),
    taskId: 'a',
    attempt: 1,
    startedAtMs: performance.now(),
    leaseExpiresAtMs,
    controller: new AbortController(),
    interrupt: null,
    abortCause: null,
    done: Promise.resolve(),
  };
}

describe('LeaseLoop', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  /** Starts a lease loop of runner `r1` over `active` and `ahead`, stopped after the test. */
  const startLoop = (store: ExecutionStore, clock: ManualClock, active: ActiveTasks, ahead = new ClaimedAhead()) => {
    const loop = new LeaseLoop({
      store,
      active,
      ahead,
      runnerId: 'r1',
      taskLeaseMs: LEASE_MS,
      clock,
      logger: silentLogger,
    });
    cleanups.push(() => loop.stop());
    loop.start();
  };

  it('aborts a running task whose lease runs out while renewals fail, and only then', async () => {
    const { storage, remove } = await tempSqliteStorage();
    cleanups.push(remove);
    // The real store, its renewals failing as when the database is unreachable.
    const store = Object.create(storage.executions) as ExecutionStore;
    let renewals = 0;
    store.renewLeases = async () => {
      renewals += 1;
      throw new DatabaseError('renewLeases failed: connection refused');
    };
    const clock = new ManualClock(T0);
    const active = new ActiveTasks();
    const task = runningTask(T0.getTime() + LEASE_MS);
    active.add(task);
    startLoop(store, clock, active);

    await waitFor(() => renewals >= 2);
    expect(task.controller.signal.aborted).toBe(false);
    clock.advance(LEASE_MS);
    await waitFor(() => task.controller.signal.aborted);
    expect(task.abortCause).toBe('lease_lost');
  });

  it('renews the leases of tasks claimed ahead with the running ones, and drops those it no longer holds', async () => {
    const { storage, remove } = await tempSqliteStorage();
    cleanups.push(remove);
    const store = storage.executions;
    const claimed = await claimedOneTaskPipelines(store, 2, { runnerId: 'r1', leaseMs: LEASE_MS, now: T0 });
    const [kept, lost] = claimed as [(typeof claimed)[0], (typeof claimed)[0]];
    const ahead = new ClaimedAhead();
    ahead.push(claimed);
    // Another runner's takeover, a cancel or a pause rewrites the row: here, a release.
    expect(await store.releaseLeases('r1', [leaseOfTask(lost.task)], T0)).toBe(1);
    const clock = new ManualClock(new Date(T0.getTime() + 10));
    const active = new ActiveTasks();
    startLoop(store, clock, active, ahead);

    await waitFor(() => ahead.size === 1);
    const renewedUntil = T0.getTime() + 10 + LEASE_MS;
    const [row] = await store.listTasks(kept.pipeline.id);
    expect(row!.leaseExpiresAt?.getTime()).toBe(renewedUntil);
    expect(ahead.take(renewedUntil - 1)?.task).toMatchObject({
      id: kept.task.id,
      leaseExpiresAt: new Date(renewedUntil),
    });
  });
});
