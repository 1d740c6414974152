import {
  type ClaimedTask,
  type ExecutionStore,
  type FinishTaskRequest,
  type NewPipeline,
  newId,
  type Storage,
  ValidationError,
} from '@orreryjs/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FinishWriter } from '../../src/worker/finish-writer.js';
import { ADAPTERS, type TestDatabase } from '../support.js';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const WORKFLOW = 'finisher';

/** A pipeline of tasks a and b, and c depending on both. */
function diamond(): NewPipeline {
  return {
    id: newId(),
    workflowName: WORKFLOW,
    workflowVersion: 'v1',
    input: {},
    idempotencyKey: null,
    scheduledTime: null,
    now: T0,
    tasks: [
      { id: newId(), taskId: 'a', position: 0, pendingDeps: 0 },
      { id: newId(), taskId: 'b', position: 1, pendingDeps: 0 },
      { id: newId(), taskId: 'c', position: 2, pendingDeps: 2 },
    ],
  };
}

/** The real store, with the sizes of its finishTasks batches recorded. */
function recording(store: ExecutionStore): { store: ExecutionStore; batches: number[] } {
  const batches: number[] = [];
  const recorded = Object.create(store) as ExecutionStore;
  recorded.finishTasks = (requests, options) => {
    batches.push(requests.length);
    return store.finishTasks(requests, options);
  };
  return { store: recorded, batches };
}

/** Lets the writer start the write of what it has queued (it waits for the end of the current turn). */
const writeStarted = () => new Promise((resolve) => setImmediate(resolve));

function completion(claimed: ClaimedTask, output: Record<string, number> = {}): FinishTaskRequest {
  return {
    runnerId: claimed.task.leaseOwner!,
    taskExecutionId: claimed.task.id,
    pipelineExecutionId: claimed.task.pipelineExecutionId,
    taskId: claimed.task.taskId,
    attempt: claimed.task.attempt,
    outcome: { status: 'completed', output: { set: output, deleted: [] } },
    dependents: claimed.task.taskId === 'c' ? [] : ['c'],
    now: T0,
  };
}

describe.each(ADAPTERS)('FinishWriter on $name', (adapter) => {
  let db: TestDatabase;
  let storage: Storage;
  const claim = (limit = 100) =>
    storage.executions.claimTasks({
      runnerId: 'r1',
      registered: [{ workflowName: WORKFLOW, taskIds: ['a', 'b', 'c'] }],
      limit,
      leaseMs: 60_000,
      now: T0,
    });

  beforeEach(async () => {
    db = adapter.open();
    storage = await db.storage();
  });
  afterEach(async () => {
    await storage.close();
    await db.remove();
  });

  it('commits outcomes ending in one turn together, and those ending while a commit is in flight together', async () => {
    const pipelines = Array.from({ length: 20 }, diamond);
    await storage.executions.createPipelines(pipelines);
    const claimed = await claim();
    expect(claimed).toHaveLength(40);
    const { store, batches } = recording(storage.executions);
    const writer = new FinishWriter(store);
    const lone = writer.finish(completion(claimed[0]!, { n: 0 }));
    await writeStarted();
    const rest = claimed.slice(1).map((c, n) => writer.finish(completion(c, { n: n + 1 })));
    const results = await Promise.all([lone, ...rest]);
    expect(results.every((r) => r.accepted)).toBe(true);
    expect(results.reduce((sum, r) => sum + r.readied, 0)).toBe(20);
    expect(batches).toEqual([1, 39]);
    const children = await claim();
    expect(children.map((c) => c.task.taskId)).toEqual(Array(20).fill('c'));
    const ends = await Promise.all(children.map((c) => writer.finish(completion(c))));
    expect(ends.map((r) => r.finishedPipeline?.status)).toEqual(Array(20).fill('completed'));
    expect(batches).toEqual([1, 39, 20]);
  });

  it('claims along with a batch when offered a claim, in the same transaction, and only then', async () => {
    await storage.executions.createPipelines([diamond(), diamond()]);
    const [a1, b1] = await claim(2);
    const claimedAlong: string[][] = [];
    let offers = 0;
    const writer = new FinishWriter(storage.executions, () => {
      offers += 1;
      if (offers > 1) return null;
      return {
        request: {
          runnerId: 'r1',
          registered: [{ workflowName: WORKFLOW, taskIds: ['a', 'b', 'c'] }],
          limit: 10,
          leaseMs: 60_000,
          now: T0,
        },
        claimed: (tasks) => void claimedAlong.push(tasks.map((t) => t.task.taskId).sort()),
      };
    });
    const results = await Promise.all([writer.finish(completion(a1!)), writer.finish(completion(b1!))]);
    expect(results.map((r) => r.accepted)).toEqual([true, true]);
    // The child the batch readied and the second pipeline's first tasks, leased in the outcomes' transaction.
    expect(claimedAlong).toEqual([['a', 'b', 'c']]);
    expect(await claim()).toEqual([]);
  });

  it('refuses a stale outcome of a batch alone and commits the others', async () => {
    const pipeline = diamond();
    await storage.executions.createPipeline(pipeline);
    const [a, b] = await claim();
    const writer = new FinishWriter(storage.executions);
    const lone = writer.finish(completion(a!));
    await writeStarted();
    const stale = writer.finish({ ...completion(b!), runnerId: 'r2' });
    const fresh = writer.finish(completion(b!));
    expect(await lone).toMatchObject({ accepted: true, readied: 0 });
    expect(await stale).toEqual({ accepted: false, readied: 0, finishedPipeline: null });
    expect(await fresh).toMatchObject({ accepted: true, readied: 1 });
    expect((await storage.executions.listTasks(pipeline.id)).map((t) => t.status)).toEqual([
      'completed',
      'completed',
      'ready',
    ]);
  });

  it('fails only the bad outcome of a batch whose write fails, committing the others', async () => {
    await storage.executions.createPipelines([diamond(), diamond()]);
    const [a1, b1, a2] = await claim();
    const { store, batches } = recording(storage.executions);
    const writer = new FinishWriter(store);
    const lone = writer.finish(completion(a1!));
    await writeStarted();
    const good = writer.finish(completion(b1!));
    // A pipeline id that is not a UUID: the database refuses the statement.
    const bad = writer
      .finish({ ...completion(a2!), pipelineExecutionId: 'not-a-uuid' })
      .catch((error: unknown) => error);
    await expect(lone).resolves.toMatchObject({ accepted: true });
    await expect(good).resolves.toMatchObject({ accepted: true, readied: 1 });
    expect(await bad).toBeInstanceOf(ValidationError);
    expect(batches).toEqual([1, 2, 1, 1]);
  });
});
