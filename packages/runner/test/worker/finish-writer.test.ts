import { type Storage, ValidationError } from '@orreryjs/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FinishWriter, MAX_FINISHES_PER_WRITE, MAX_WRITES_IN_FLIGHT } from '../../src/worker/finish-writer.js';
import { ADAPTERS, type TestDatabase } from '../support.js';
import { completion, diamond, REGISTERED, recording, T0 } from './outcomes.js';

describe.each(ADAPTERS)('FinishWriter on $name', (adapter) => {
  let db: TestDatabase;
  let storage: Storage;
  const claim = (limit = 1000) =>
    storage.executions.claimTasks({ runnerId: 'r1', registered: REGISTERED, limit, leaseMs: 60_000, now: T0 });

  beforeEach(async () => {
    db = adapter.open();
    storage = await db.storage();
  });
  afterEach(async () => {
    await storage.close();
    await db.remove();
  });

  it(`commits the queued outcomes together, up to ${MAX_FINISHES_PER_WRITE} a write`, async () => {
    await storage.executions.createPipelines(Array.from({ length: 60 }, diamond));
    const claimed = await claim();
    expect(claimed).toHaveLength(120);
    const { store, batches } = recording(storage.executions);
    const writer = new FinishWriter(store);
    const results = claimed.map((c, n) => writer.enqueue(completion(c, { n })));
    expect(writer.queued).toBe(120);
    await writer.writeNext(null);
    await writer.writeNext(null);
    expect(writer.canWrite).toBe(false);
    const committed = await Promise.all(results);
    expect(committed.every((r) => r.accepted)).toBe(true);
    expect(committed.reduce((sum, r) => sum + r.readied, 0)).toBe(60);
    expect(batches()).toEqual([MAX_FINISHES_PER_WRITE, 20]);
    const children = await claim();
    expect(children.map((c) => c.task.taskId)).toEqual(Array(60).fill('c'));
    const ends = children.map((c) => writer.enqueue(completion(c)));
    await writer.writeNext(null);
    expect((await Promise.all(ends)).map((r) => r.finishedPipeline?.status)).toEqual(Array(60).fill('completed'));
  });

  it(`holds at most ${MAX_WRITES_IN_FLIGHT} writes in flight`, async () => {
    await storage.executions.createPipelines([diamond(), diamond()]);
    const [a1, b1, a2] = await claim();
    const writer = new FinishWriter(storage.executions);
    const first = writer.enqueue(completion(a1!));
    const firstWrite = writer.writeNext(null);
    const second = writer.enqueue(completion(b1!));
    expect(writer.canWrite).toBe(true);
    const secondWrite = writer.writeNext(null);
    const third = writer.enqueue(completion(a2!));
    expect(writer.canWrite).toBe(false);
    await firstWrite;
    expect(writer.canWrite).toBe(true);
    await Promise.all([secondWrite, writer.writeNext(null)]);
    expect((await Promise.all([first, second, third])).map((r) => r.accepted)).toEqual([true, true, true]);
  });

  it('claims along with a batch when given a claim, in the same transaction, before the outcomes are answered', async () => {
    await storage.executions.createPipelines([diamond(), diamond()]);
    const [a1, b1] = await claim(2);
    const claimedAlong: string[][] = [];
    const writer = new FinishWriter(storage.executions);
    const answered = [writer.enqueue(completion(a1!)), writer.enqueue(completion(b1!))].map((result) =>
      result.then((r) => {
        // The claimed tasks are handed out before any caller hears of its commit.
        expect(claimedAlong).toHaveLength(1);
        return r.accepted;
      }),
    );
    await writer.writeNext({
      request: { runnerId: 'r1', registered: REGISTERED, limit: 10, leaseMs: 60_000, now: T0 },
      claimed: (tasks) => void claimedAlong.push(tasks.map((t) => t.task.taskId).sort()),
    });
    expect(await Promise.all(answered)).toEqual([true, true]);
    // The child the batch readied and the second pipeline's first tasks, leased in the outcomes' transaction.
    expect(claimedAlong).toEqual([['a', 'b', 'c']]);
    expect(await claim()).toEqual([]);
  });

  it('refuses a stale outcome of a batch alone and commits the others', async () => {
    const pipeline = diamond();
    await storage.executions.createPipeline(pipeline);
    const [a, b] = await claim();
    const writer = new FinishWriter(storage.executions);
    const stale = writer.enqueue({ ...completion(b!), runnerId: 'r2' });
    const fresh = [writer.enqueue(completion(a!)), writer.enqueue(completion(b!))];
    await writer.writeNext(null);
    expect(await stale).toEqual({ accepted: false, readied: 0, finishedPipeline: null });
    const committed = await Promise.all(fresh);
    expect(committed.map((r) => r.accepted)).toEqual([true, true]);
    // c is readied once, by whichever outcome of the batch ended its last dependency.
    expect(committed.reduce((sum, r) => sum + r.readied, 0)).toBe(1);
    expect((await storage.executions.listTasks(pipeline.id)).map((t) => t.status)).toEqual([
      'completed',
      'completed',
      'ready',
    ]);
  });

  it('fails only the bad outcome of a batch whose write fails, committing the others, and tells a claim along it failed', async () => {
    await storage.executions.createPipelines([diamond(), diamond()]);
    const [a1, b1, a2] = await claim();
    const { store, writes } = recording(storage.executions);
    const writer = new FinishWriter(store);
    const good = [writer.enqueue(completion(a1!)), writer.enqueue(completion(b1!))];
    // A pipeline id that is not a UUID: the database refuses the statement.
    const bad = writer
      .enqueue({ ...completion(a2!), pipelineExecutionId: 'not-a-uuid' })
      .catch((error: unknown) => error);
    const along: Array<{ tasks: number; failed: boolean }> = [];
    await writer.writeNext({
      request: { runnerId: 'r1', registered: REGISTERED, limit: 10, leaseMs: 60_000, now: T0 },
      claimed: (tasks, failed) => void along.push({ tasks: tasks.length, failed }),
    });
    const committed = await Promise.all(good);
    expect(committed.map((r) => r.accepted)).toEqual([true, true]);
    expect(committed.reduce((sum, r) => sum + r.readied, 0)).toBe(1);
    expect(await bad).toBeInstanceOf(ValidationError);
    expect(along).toEqual([{ tasks: 0, failed: true }]);
    // The batch with its claim, then each outcome alone, without a claim.
    expect(writes).toEqual([
      { outcomes: 3, withClaim: true },
      { outcomes: 1, withClaim: false },
      { outcomes: 1, withClaim: false },
      { outcomes: 1, withClaim: false },
    ]);
  });
});
