import type { Logger } from '@orreryjs/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defineWorkflow, OrreryClient, type PipelineExecution, type TaskRunInfo } from '../src/index.js';
import { REMOTE_STOP_MESSAGE } from '../src/runner.js';
import { ADAPTERS, gate, runnersPerTest, untilAborted, waitFor } from './support.js';

/*
 * Pauses, cancels and retries made by another process. The "other process" is an OrreryClient
 * with connections of its own: nothing it does reaches the worker's memory, only the database
 * (and, on Postgres, its notifications), as from another host.
 */

/** Every start and end of an attempt of the `held` task, in order. */
const timeline: Array<{ attempt: number; event: 'start' | 'end'; aborted: boolean }> = [];
let release = gate();

const held = defineWorkflow({
  name: 'held',
  tasks: [
    {
      id: 'held',
      run: async (_ctx, info: TaskRunInfo) => {
        timeline.push({ attempt: info.attempt, event: 'start', aborted: false });
        await Promise.race([release.promise, untilAborted(info.signal)]);
        timeline.push({ attempt: info.attempt, event: 'end', aborted: info.signal.aborted });
      },
    },
  ],
});

/** Fails its first attempt for good (one attempt allowed), succeeds once retried. */
const failsOnce = defineWorkflow({
  name: 'fails-once',
  tasks: [
    {
      id: 'only',
      retry: { maxAttempts: 1 },
      run: (ctx, info) => {
        if (info.attempt === 1) throw new Error('first attempt fails');
        ctx.set('attempt', info.attempt);
      },
    },
  ],
});

/** The most attempts of the task that were ever between their start and their end at once. */
function mostAtOnce(events: typeof timeline): number {
  let now = 0;
  let most = 0;
  for (const { event } of events) {
    now += event === 'start' ? 1 : -1;
    most = Math.max(most, now);
  }
  return most;
}

describe.each(ADAPTERS)('pauses, cancels and retries from another process on $name', (adapter) => {
  const logged: Array<{ obj: object; msg: string | undefined }> = [];
  const logger: Logger = {
    debug: () => {},
    info: (obj, msg) => logged.push({ obj, msg }),
    warn: () => {},
    error: () => {},
  };
  const runners = runnersPerTest(adapter, () => ({ workflows: [held, failsOnce], pollIntervalMs: 20, logger }), {
    beforeShutdown: () => release.open(),
  });
  const clients: OrreryClient[] = [];
  const remote = async () => {
    const client = await OrreryClient.create({ ...runners.db.config, pollIntervalMs: 20 });
    clients.push(client);
    return client;
  };
  beforeEach(() => {
    timeline.length = 0;
    logged.length = 0;
    release = gate();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
  });

  const startHeld = async (): Promise<PipelineExecution> => {
    const worker = await runners.open();
    await worker.start();
    const execution = await worker.executeAsync('held');
    await waitFor(() => timeline.length === 1);
    return execution;
  };

  it('aborts the running attempt on a remote pause, and never runs two attempts of the task at once after the resume', async () => {
    const execution = await startHeld();
    const other = await remote();
    await other.pauseExecution(execution.id);
    await other.resumeExecution(execution.id);
    await waitFor(() => timeline.some((e) => e.attempt === 2 && e.event === 'start'));
    release.open();
    const result = await execution.wait();

    expect(result.status).toBe('completed');
    expect(timeline.slice(0, 2)).toEqual([
      { attempt: 1, event: 'start', aborted: false },
      { attempt: 1, event: 'end', aborted: true },
    ]);
    expect(mostAtOnce(timeline)).toBe(1);
  });

  it('aborts the running attempt on a remote cancel, and runs the retry only once it has ended', async () => {
    const execution = await startHeld();
    const other = await remote();
    await other.cancelExecution(execution.id);
    await other.retryExecution(execution.id);
    await waitFor(() => timeline.some((e) => e.attempt === 2 && e.event === 'start'));
    release.open();

    expect((await execution.wait()).status).toBe('completed');
    expect(timeline.slice(0, 2).map((e) => [e.attempt, e.event, e.aborted])).toEqual([
      [1, 'start', false],
      [1, 'end', true],
    ]);
    expect(mostAtOnce(timeline)).toBe(1);
  });

  it('stops the local attempt of a remotely paused pipeline without waiting for a lease renewal', async () => {
    const execution = await startHeld();
    const other = await remote();
    await other.pauseExecution(execution.id);
    // The lease is 30 s and renewed every 10 s: only the pause's wake-up (or poll) can end the attempt now.
    await waitFor(() => timeline.length === 2);
    expect(timeline[1]).toEqual({ attempt: 1, event: 'end', aborted: true });
    expect(logged.filter((l) => l.msg === REMOTE_STOP_MESSAGE).map((l) => l.obj)).toEqual([
      { executionId: execution.id, cause: 'paused', aborted: 1, dropped: 0 },
    ]);
    expect(await other.getExecutionStatus(execution.id)).toBe('paused');
  });

  it('answers a wait with the outcome of a retry made by another process, not the end it saw before', async () => {
    const worker = await runners.open();
    await worker.start();
    const waiter = await remote();
    const first = await waiter.executeAsync('fails-once', {}, { idempotencyKey: 'retried-elsewhere' });
    expect((await first.wait()).status).toBe('failed');

    const other = await remote();
    expect((await (await other.retryExecution(first.id)).wait()).status).toBe('completed');

    const again = await first.wait();
    expect(again.status).toBe('completed');
    expect(again.finalContext).toEqual({ attempt: 2 });
    const byKey = await waiter.execute('fails-once', {}, { idempotencyKey: 'retried-elsewhere' });
    expect([byKey.executionId, byKey.status]).toEqual([first.id, 'completed']);
  });
});
