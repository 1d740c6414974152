import { DatabaseError, type ExecutionStore, type NewPipeline, newId, type Storage } from '@orreryjs/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PipelineWriter } from '../src/pipeline-writer.js';
import { ADAPTERS, type TestDatabase } from './support.js';

function pipeline(overrides: Partial<NewPipeline> = {}): NewPipeline {
  return {
    id: newId(),
    workflowName: 'writer',
    workflowVersion: 'v1',
    input: {},
    idempotencyKey: null,
    scheduledTime: null,
    now: new Date('2026-01-01T00:00:00.000Z'),
    tasks: [{ id: newId(), taskId: 'only', position: 0, pendingDeps: 0 }],
    ...overrides,
  };
}

/** The real store, with its batch sizes recorded. */
function recording(store: ExecutionStore): { store: ExecutionStore; batches: number[] } {
  const batches: number[] = [];
  const recorded = Object.create(store) as ExecutionStore;
  recorded.createPipelines = (pipelines) => {
    batches.push(pipelines.length);
    return store.createPipelines(pipelines);
  };
  return { store: recorded, batches };
}

describe.each(ADAPTERS)('PipelineWriter on $name', (adapter) => {
  let db: TestDatabase;
  let storage: Storage;

  beforeEach(async () => {
    db = adapter.open();
    storage = await db.storage();
  });
  afterEach(async () => {
    await storage.close();
    await db.remove();
  });

  it('writes a lone pipeline at once and batches those asked for while a write is in flight', async () => {
    const { store, batches } = recording(storage.executions);
    const writer = new PipelineWriter(store);
    const requests = Array.from({ length: 50 }, (_, n) => pipeline({ input: { n } }));
    const results = await Promise.all(requests.map((request) => writer.create(request)));
    expect(results.map((r) => [r.pipeline.id, r.created, r.pipeline.input])).toEqual(
      requests.map((r) => [r.id, true, r.input]),
    );
    expect(batches[0]).toBe(1);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(50);
    expect(batches.length).toBeLessThan(50);
    for (const request of requests) expect(await storage.executions.getPipeline(request.id)).not.toBeNull();
  });

  it('returns the first pipeline of a key to every caller that used it', async () => {
    const writer = new PipelineWriter(storage.executions);
    const key = newId();
    const [first, second] = await Promise.all([
      writer.create(pipeline({ idempotencyKey: key })),
      writer.create(pipeline({ idempotencyKey: key })),
    ]);
    expect(first!.created).toBe(true);
    expect(second).toEqual({ pipeline: first!.pipeline, created: false });
  });

  it('fails only the bad request of a batch whose write fails, committing the others, and carries on', async () => {
    const { store, batches } = recording(storage.executions);
    const writer = new PipelineWriter(store);
    const taken = pipeline();
    await storage.executions.createPipeline(taken);
    const lone = writer.create(pipeline());
    const good = [pipeline(), pipeline(), pipeline()];
    const goodWrites = good.map((request) => writer.create(request));
    const bad = writer.create({ ...pipeline(), id: taken.id });
    await expect(lone).resolves.toMatchObject({ created: true });
    await expect(bad).rejects.toBeInstanceOf(DatabaseError);
    for (const write of goodWrites) await expect(write).resolves.toMatchObject({ created: true });
    for (const request of good) expect(await storage.executions.getPipeline(request.id)).not.toBeNull();
    // The four were asked for while the lone write ran: one batch of four failed, then each was written alone.
    expect(batches).toEqual([1, 4, 1, 1, 1, 1]);
    await expect(writer.create(pipeline())).resolves.toMatchObject({ created: true });
  });
});
