import { type ClaimTasksRequest, leaseOfTask, type Storage } from '@orreryjs/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { tempSqliteStorage } from '../../../test/support/sqlite.js';
import { CLAIM_AHEAD_FACTOR, CLAIM_AHEAD_MAX_TASK_MS } from '../src/claim-loop.js';
import { ClaimedAhead } from '../src/claimed-ahead.js';
import { type DefaultRunner, defineWorkflow, type PipelineExecution } from '../src/index.js';
import { ADAPTERS, claimedOneTaskPipelines, runnersPerTest, waitFor } from './support.js';

const SLOTS = 2;
const BACKLOG = 30;

/** Task code running now and the most that ever ran at once, and runs per pipeline. */
const running = { now: 0, most: 0 };
const runsOf = new Map<string, number>();
/** Called from inside the task code of the pipeline's nth run overall (1-based), if set; the task awaits it. */
let onRun: ((nth: number) => void | Promise<void>) | null = null;

const track = async (executionId: string, work: () => Promise<void>) => {
  running.now += 1;
  running.most = Math.max(running.most, running.now);
  runsOf.set(executionId, (runsOf.get(executionId) ?? 0) + 1);
  await onRun?.([...runsOf.values()].reduce((a, b) => a + b, 0));
  try {
    await work();
  } finally {
    running.now -= 1;
  }
};

const short = defineWorkflow({
  name: 'short',
  tasks: [{ id: 'only', run: (_ctx, info) => track(info.executionId, () => new Promise(setImmediate)) }],
});
const long = defineWorkflow({
  name: 'long',
  tasks: [
    {
      id: 'only',
      run: (_ctx, info) =>
        track(info.executionId, () => new Promise((resolve) => setTimeout(resolve, 3 * CLAIM_AHEAD_MAX_TASK_MS))),
    },
  ],
});

describe.each(ADAPTERS)('claiming ahead on $name', (adapter) => {
  const { open } = runnersPerTest(adapter, () => ({
    workflows: [short, long],
    maxConcurrentTasks: SLOTS,
    pollIntervalMs: 20,
  }));
  /** Records the limit of every claim the runner's own loop makes, through its real store. */
  const recordClaims = (runner: DefaultRunner) => {
    const { executions } = (runner as unknown as { storage: Storage }).storage;
    const claim = executions.claimTasks.bind(executions);
    const limits: number[] = [];
    executions.claimTasks = (request: ClaimTasksRequest) => {
      limits.push(request.limit);
      return claim(request);
    };
    return limits;
  };
  const backlog = async (workflowName: string, count: number) => {
    const producer = await open();
    return producer.executeAsyncMany(Array.from({ length: count }, () => ({ workflowName })));
  };
  const results = (runner: DefaultRunner, executions: readonly PipelineExecution[]) =>
    Promise.all(executions.map((e) => runner.getExecutionResult(e.id)));

  beforeEach(() => {
    running.now = 0;
    running.most = 0;
    runsOf.clear();
    onRun = null;
  });

  it('claims ahead of its free slots while saturated with short tasks, running no more than its slots at once', async () => {
    const executions = await backlog('short', BACKLOG);
    const worker = await open();
    const limits = recordClaims(worker);
    await worker.start();
    await waitFor(async () => (await worker.listExecutions({ status: 'completed' })).length === BACKLOG);

    expect(Math.max(...limits)).toBeGreaterThan(SLOTS);
    expect(Math.max(...limits)).toBeLessThanOrEqual(SLOTS + CLAIM_AHEAD_FACTOR * SLOTS);
    expect(running.most).toBeLessThanOrEqual(SLOTS);
    expect(executions.map((e) => runsOf.get(e.id))).toEqual(executions.map(() => 1));
    const done = await results(worker, executions);
    expect(done.map((r) => [r.status, r.tasks[0]!.attempts])).toEqual(done.map(() => ['completed', 1]));
  });

  it('claims only for free slots while its tasks run longer than a claim ahead is worth', async () => {
    const executions = await backlog('long', 3 * SLOTS);
    const worker = await open();
    const limits = recordClaims(worker);
    await worker.start();
    await waitFor(async () => (await worker.listExecutions({ status: 'completed' })).length === executions.length);

    expect(limits.length).toBeGreaterThan(0);
    expect(Math.max(...limits)).toBeLessThanOrEqual(SLOTS);
  });

  it('runs the tasks it claimed ahead before shutdown ends, so another runner finds none leased', async () => {
    const executions = await backlog('short', BACKLOG);
    const worker = await open({ maxConcurrentTasks: 1 });
    const limits = recordClaims(worker);
    let stopped: Promise<void> | undefined;
    onRun = (nth) => {
      if (nth === 5) stopped = worker.shutdown();
    };
    await worker.start();
    await waitFor(() => stopped !== undefined);
    await stopped;
    onRun = null;
    expect(Math.max(...limits)).toBeGreaterThan(1);

    const successor = await open();
    const atHandover = await results(successor, executions);
    expect(atHandover.map((r) => r.tasks[0]!.status).filter((s) => s !== 'completed' && s !== 'ready')).toEqual([]);
    await successor.start();
    await waitFor(async () => (await successor.listExecutions({ status: 'completed' })).length === BACKLOG);
    expect(executions.map((e) => runsOf.get(e.id))).toEqual(executions.map(() => 1));
    const done = await results(successor, executions);
    expect(done.map((r) => r.tasks[0]!.attempts)).toEqual(done.map(() => 1));
  });

  it('never starts a task it claimed ahead once its pipeline is cancelled', async () => {
    const executions = await backlog('short', BACKLOG);
    const worker = await open({ maxConcurrentTasks: 1 });
    const limits = recordClaims(worker);
    const cancelled = new Set<string>();
    // The fifth task holds the only slot until every pipeline that has not run yet is cancelled,
    // those waiting ahead (leased, started by nobody) among them.
    onRun = async (nth) => {
      if (nth !== 5) return;
      for (const { id } of executions.filter((e) => !runsOf.has(e.id))) cancelled.add(id);
      await Promise.all([...cancelled].map((id) => worker.cancelExecution(id)));
    };
    await worker.start();
    await waitFor(async () => (await worker.listExecutions({ status: 'completed' })).length === 5);
    await waitFor(async () => (await worker.listExecutions({ status: 'cancelled' })).length === cancelled.size);

    expect(Math.max(...limits)).toBeGreaterThan(1);
    expect(cancelled.size).toBe(BACKLOG - 5);
    expect([...cancelled].filter((id) => runsOf.has(id))).toEqual([]);
    const ended = await results(
      worker,
      executions.filter((e) => cancelled.has(e.id)),
    );
    // Claimed (attempt 1) but never run: the tasks that waited ahead when the cancel came.
    expect(ended.filter((r) => r.tasks[0]!.attempts > 0).length).toBeGreaterThan(0);
    expect(ended.map((r) => r.status)).toEqual(ended.map(() => 'cancelled'));
  });
});

describe('ClaimedAhead', () => {
  const LEASE_MS = 1_000;
  const T0 = new Date('2026-01-01T00:00:00.000Z');
  const claimedTasks = async (count: number) => {
    const { storage, remove } = await tempSqliteStorage();
    try {
      return await claimedOneTaskPipelines(storage.executions, count, { runnerId: 'r1', leaseMs: LEASE_MS, now: T0 });
    } finally {
      await remove();
    }
  };

  it('hands tasks out in claim order, skipping those whose lease ran out while they waited', async () => {
    const claimed = await claimedTasks(3);
    const ahead = new ClaimedAhead();
    ahead.push(claimed.slice(0, 2));
    ahead.push(claimed.slice(2));
    expect(ahead.take(T0.getTime())?.task.id).toBe(claimed[0]!.task.id);
    // Renewed on the two left, then one of them no longer held.
    ahead.renewed(ahead.leases(), new Set([claimed[2]!.task.id]), new Date(T0.getTime() + 3 * LEASE_MS));
    expect(ahead.size).toBe(1);
    expect(ahead.take(T0.getTime() + 2 * LEASE_MS)?.task.id).toBe(claimed[2]!.task.id);

    ahead.push(claimed.slice(0, 1));
    expect(ahead.take(T0.getTime() + LEASE_MS)).toBeUndefined();
    expect(ahead.size).toBe(0);
  });

  it('leaves tasks claimed after a renewal started alone, and drops a cancelled or paused pipeline', async () => {
    const claimed = await claimedTasks(3);
    const ahead = new ClaimedAhead();
    ahead.push(claimed.slice(0, 1));
    const sent = ahead.leases();
    ahead.push(claimed.slice(1));
    ahead.renewed(sent, new Set(), new Date(T0.getTime() + 2 * LEASE_MS));
    expect(ahead.leases()).toEqual(claimed.slice(1).map((c) => leaseOfTask(c.task)));

    ahead.dropPipeline(claimed[1]!.pipeline.id);
    expect(ahead.drain()).toEqual([leaseOfTask(claimed[2]!.task)]);
    expect(ahead.size).toBe(0);
  });
});
