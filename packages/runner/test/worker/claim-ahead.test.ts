import { type ClaimTasksRequest, leaseOfTask, type Storage, silentLogger } from '@orreryjs/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { tempSqliteStorage } from '../../../../test/support/sqlite.js';
import { type DefaultRunner, defineWorkflow, OrreryClient, type PipelineExecution } from '../../src/index.js';
import { REMOTE_STOP_MESSAGE } from '../../src/runner.js';
import { CLAIM_AHEAD_FACTOR, CLAIM_AHEAD_MAX_TASK_MS } from '../../src/worker/claim-loop.js';
import { ClaimedAhead } from '../../src/worker/claimed-ahead.js';
import { ADAPTERS, claimedOneTaskPipelines, runnersPerTest, waitFor } from '../support.js';

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
  const harness = runnersPerTest(adapter, () => ({
    workflows: [short, long],
    maxConcurrentTasks: SLOTS,
    pollIntervalMs: 20,
  }));
  const { open } = harness;
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
  /**
   * Pipelines whose task the runner claimed ahead of a free slot, for a runner of one slot: a claim
   * happens only with the slot free, so every task it returns after the first waits ahead.
   */
  const recordAhead = (runner: DefaultRunner) => {
    const { executions } = (runner as unknown as { storage: Storage }).storage;
    const claim = executions.claimTasks.bind(executions);
    const ahead = new Set<string>();
    executions.claimTasks = async (request: ClaimTasksRequest) => {
      const claimed = await claim(request);
      for (const { pipeline } of claimed.slice(1)) ahead.add(pipeline.id);
      return claimed;
    };
    return ahead;
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
    const claimedAhead = recordAhead(worker);
    const cancelled = new Set<string>();
    let heldAt = 0;
    // The first task to run while others wait ahead (leased, started by nobody) holds the only slot
    // until every pipeline that has not run yet is cancelled, those waiting ahead among them.
    onRun = async (nth) => {
      const waiting = executions.filter((e) => !runsOf.has(e.id));
      if (heldAt > 0 || !waiting.some((e) => claimedAhead.has(e.id))) return;
      heldAt = nth;
      for (const { id } of waiting) cancelled.add(id);
      await Promise.all([...cancelled].map((id) => worker.cancelExecution(id)));
    };
    await worker.start();
    await waitFor(() => heldAt > 0);
    await waitFor(async () => (await worker.listExecutions({ status: 'completed' })).length === heldAt);
    await waitFor(async () => (await worker.listExecutions({ status: 'cancelled' })).length === cancelled.size);

    expect(cancelled.size).toBe(BACKLOG - heldAt);
    expect([...cancelled].filter((id) => runsOf.has(id))).toEqual([]);
    const ended = await results(
      worker,
      executions.filter((e) => cancelled.has(e.id)),
    );
    // Claimed (attempt 1) but never run: the tasks that waited ahead when the cancel came.
    expect(ended.filter((r) => r.tasks[0]!.attempts > 0).length).toBeGreaterThan(0);
    expect(ended.map((r) => r.status)).toEqual(ended.map(() => 'cancelled'));
  });

  it('drops them at a wake-up when another process cancels or pauses them: the cancelled never run, the paused run once after the resume', async () => {
    const stops = new Map<string, string>();
    const logger = {
      ...silentLogger,
      info: (obj: object, msg?: string) => {
        if (msg !== REMOTE_STOP_MESSAGE) return;
        const { executionId, cause } = obj as { executionId: string; cause: string };
        stops.set(executionId, cause);
      },
    };
    const executions = await backlog('short', BACKLOG);
    const other = await OrreryClient.create({ ...harness.db.config });
    const worker = await open({ maxConcurrentTasks: 1, logger });
    const claimedAhead = recordAhead(worker);
    const [cancelled, paused]: [string[], string[]] = [[], []];
    // The first task to run while others wait ahead holds the only slot while another process cancels
    // or pauses every pipeline waiting ahead, until the worker has stopped them all.
    onRun = async () => {
      if (cancelled.length > 0) return;
      const ahead = executions.filter((e) => !runsOf.has(e.id) && claimedAhead.has(e.id)).map((e) => e.id);
      if (ahead.length === 0) return;
      for (const [i, id] of ahead.entries()) (i % 2 === 0 ? cancelled : paused).push(id);
      await Promise.all([
        ...cancelled.map((id) => other.cancelExecution(id)),
        ...paused.map((id) => other.pauseExecution(id, 'paused elsewhere')),
      ]);
      await waitFor(() => ahead.every((id) => stops.has(id)));
    };
    try {
      await worker.start();
      const left = () => BACKLOG - cancelled.length - paused.length;
      await waitFor(
        async () => cancelled.length > 0 && (await worker.listExecutions({ status: 'completed' })).length === left(),
      );
      expect([...cancelled, ...paused].filter((id) => runsOf.has(id))).toEqual([]);
      expect(cancelled.map((id) => stops.get(id))).toEqual(cancelled.map(() => 'cancelled'));
      expect(paused.map((id) => stops.get(id))).toEqual(paused.map(() => 'paused'));

      await Promise.all(paused.map((id) => other.resumeExecution(id)));
      await waitFor(
        async () => (await worker.listExecutions({ status: 'completed' })).length === BACKLOG - cancelled.length,
      );
      expect(executions.map((e) => runsOf.get(e.id) ?? 0)).toEqual(
        executions.map((e) => (cancelled.includes(e.id) ? 0 : 1)),
      );
    } finally {
      await other.close();
    }
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
