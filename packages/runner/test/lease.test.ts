import { DatabaseError, type ExecutionStore, ManualClock, newId, type Storage, silentLogger } from '@orreryjs/core';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';
import { afterEach, describe, expect, it } from 'vitest';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import { type ActiveTask, ActiveTasks } from '../src/active-tasks.js';
import { LeaseLoop } from '../src/lease.js';
import { waitFor } from './support.js';

const LEASE_MS = 60;
const T0 = new Date('2026-01-01T00:00:00.000Z');

function runningTask(leaseExpiresAtMs: number): ActiveTask {
  return {
    taskExecutionId: newId(),
    pipelineExecutionId: newId(),
    taskId: 'a',
    attempt: 1,
    leaseExpiresAtMs,
    controller: new AbortController(),
    abortCause: null,
    done: Promise.resolve(),
  };
}

describe('LeaseLoop', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('aborts a running task whose lease runs out while renewals fail, and only then', async () => {
    const file = tempSqliteFile();
    const storage: Storage = await openSqliteStorage({ filename: file.filename });
    cleanups.push(async () => {
      await storage.close();
      file.remove();
    });
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
    const loop = new LeaseLoop({ store, active, runnerId: 'r1', taskLeaseMs: LEASE_MS, clock, logger: silentLogger });
    cleanups.push(() => loop.stop());
    loop.start();

    await waitFor(() => renewals >= 2);
    expect(task.controller.signal.aborted).toBe(false);
    clock.advance(LEASE_MS);
    await waitFor(() => task.controller.signal.aborted);
    expect(task.abortCause).toBe('lease_lost');
  });
});
