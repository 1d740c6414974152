import { leaseOfTask, newId, type Storage, type TaskOutcome } from '@orreryjs/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStorage } from '../src/index.js';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const registered = [{ workflowName: 'wf', taskIds: ['a', 'b', 'c'] }];
let storage: Storage;

beforeEach(async () => {
  storage = await openSqliteStorage({ filename: ':memory:' });
});
afterEach(() => storage.close());

/** a -> c <- b: two parents and a child. */
async function createDiamond(idempotencyKey: string | null = null) {
  const id = newId();
  const tasks = [
    { id: newId(), taskId: 'a', position: 0, pendingDeps: 0 },
    { id: newId(), taskId: 'b', position: 1, pendingDeps: 0 },
    { id: newId(), taskId: 'c', position: 2, pendingDeps: 2 },
  ];
  const input = { n: 1 };
  const pipeline = {
    id,
    workflowName: 'wf',
    workflowVersion: 'v1',
    input,
    idempotencyKey,
    scheduledTime: null,
    now: T0,
    tasks,
  };
  return storage.executions.createPipeline(pipeline);
}

const claim = (runnerId: string, now: Date, limit = 10) =>
  storage.executions.claimTasks({ runnerId, registered, limit, leaseMs: 1000, now });

describe('SqliteExecutionStore', () => {
  it('returns the existing pipeline for a taken idempotency key and writes nothing', async () => {
    const first = await createDiamond('key-1');
    const second = await createDiamond('key-1');
    expect(second).toEqual({ pipeline: first.pipeline, created: false });
    expect(await storage.executions.listPipelines({ limit: 10, offset: 0 })).toHaveLength(1);
  });

  it('readies a child only when its last parent finishes, and ends the pipeline with the last task', async () => {
    const { pipeline } = await createDiamond();
    const claimed = await claim('r1', at(1));
    expect(claimed.map((c) => c.task.taskId).sort()).toEqual(['a', 'b']);
    expect(claimed[0]!.pipeline.status).toBe('running');
    const finish = async (taskId: string, outcome: TaskOutcome) => {
      const task = claimed.find((c) => c.task.taskId === taskId)!.task;
      const request = {
        runnerId: 'r1',
        taskExecutionId: task.id,
        pipelineExecutionId: pipeline.id,
        taskId,
        attempt: 1,
      };
      return (await storage.executions.finishTasks([{ ...request, outcome, dependents: ['c'], now: at(2) }]))
        .finished[0]!;
    };
    expect(await finish('a', { status: 'completed', output: { set: { a: 1 }, deleted: [] } })).toMatchObject({
      accepted: true,
      readied: 0,
    });
    expect(await finish('b', { status: 'failed', error: 'boom' })).toMatchObject({ accepted: true, readied: 1 });
    const [child] = await claim('r1', at(3));
    expect(child!.terminalTasks.map((t) => [t.taskId, t.status])).toEqual([
      ['a', 'completed'],
      ['b', 'failed'],
    ]);
    const done = (
      await storage.executions.finishTasks([
        {
          runnerId: 'r1',
          taskExecutionId: child!.task.id,
          pipelineExecutionId: pipeline.id,
          taskId: child!.task.taskId,
          attempt: 1,
          outcome: { status: 'skipped', reason: 'trigger all_success not met' },
          dependents: [],
          now: at(4),
        },
      ])
    ).finished[0]!;
    expect(done.finishedPipeline).toMatchObject({
      status: 'failed',
      remainingTasks: 0,
      failedTasks: 1,
      error: 'task b failed: boom',
      completedAt: at(4),
    });
  });

  it('takes over an expired lease as a failed attempt and fences out the old owner', async () => {
    await createDiamond();
    const [first] = await claim('r1', at(0), 1);
    const [takeover] = await claim('r2', at(5000), 1);
    expect(takeover).toMatchObject({ leaseExpired: true });
    expect(takeover!.task).toMatchObject({
      id: first!.task.id,
      attempt: 2,
      failedAttempts: 1,
      leaseOwner: 'r2',
      error: 'lease expired (held by r1)',
    });
    const stale = (
      await storage.executions.finishTasks([
        {
          runnerId: 'r1',
          taskExecutionId: first!.task.id,
          pipelineExecutionId: first!.pipeline.id,
          taskId: first!.task.taskId,
          attempt: 1,
          outcome: { status: 'completed', output: { set: {}, deleted: [] } },
          dependents: ['c'],
          now: at(5001),
        },
      ])
    ).finished[0]!;
    expect(stale).toEqual({ accepted: false, readied: 0, finishedPipeline: null });
    const lease = { ...leaseOfTask(first!.task), attempt: 2 };
    expect(await storage.executions.renewLeases('r1', [lease], 1000, at(5002))).toEqual([]);
    expect(await storage.executions.renewLeases('r2', [lease], 1000, at(5002))).toEqual([first!.task.id]);
    expect(await storage.executions.releaseLeases('r2', [lease], at(5003))).toBe(1);
  });

  it('pauses by requeueing running tasks, resumes to running, and cancels every unfinished task', async () => {
    const { pipeline } = await createDiamond();
    await claim('r1', at(1), 1);
    expect(await storage.executions.pausePipeline(pipeline.id, 'maintenance', at(2))).toMatchObject({
      status: 'paused',
      pauseReason: 'maintenance',
    });
    expect(await claim('r1', at(3))).toEqual([]);
    expect(await storage.executions.resumePipeline(pipeline.id, at(4))).toMatchObject({
      status: 'running',
      pauseReason: null,
    });
    const cancelled = await storage.executions.cancelPipeline(pipeline.id, at(5));
    expect(cancelled).toMatchObject({ status: 'cancelled', remainingTasks: 0, completedAt: at(5) });
    const tasks = await storage.executions.listTasks(pipeline.id);
    expect(tasks.map((t) => t.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    expect(await storage.executions.cancelPipeline(pipeline.id, at(6))).toEqual(cancelled);
    expect(await storage.executions.cancelPipeline(newId(), at(6))).toBeNull();
  });
});
