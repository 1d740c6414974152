import type { Storage } from '@orreryjs/core';
import { openPostgresStorage } from '@orreryjs/postgres-adapter';
import { OrreryClient } from '@orreryjs/runner';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';
import { afterEach, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName, postgresUrl } from './support/postgres.js';
import { spawnFixture, stopWorker, until, type Worker } from './support/processes.js';
import { tempSqliteFile } from './support/sqlite.js';

interface Target {
  env: Record<string, string>;
  open(): Promise<Storage>;
  remove(): Promise<void>;
}

const TARGETS: ReadonlyArray<{ name: string; make(): Target }> = [
  {
    name: 'sqlite',
    make: () => {
      const file = tempSqliteFile();
      return {
        env: { ORRERY_DATABASE: `sqlite:${file.filename}` },
        open: () => openSqliteStorage({ filename: file.filename }),
        remove: async () => file.remove(),
      };
    },
  },
  {
    name: 'postgres',
    make: () => {
      const schema = freshSchemaName();
      return {
        env: { ORRERY_DATABASE: postgresUrl(), ORRERY_SCHEMA: schema },
        open: () => openPostgresStorage({ connectionString: postgresUrl(), schema }),
        remove: () => dropSchema(schema),
      };
    },
  },
];

describe.each(TARGETS)('a runner killed mid-task on $name', ({ make }) => {
  const workers: Worker[] = [];
  let target: Target | undefined;
  let storage: Storage | undefined;

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => stopWorker(worker)));
    await storage?.close();
    await target?.remove();
  });

  it('has its task run again by another runner once the lease expires (attempt 2)', async () => {
    target = make();
    const first = spawnFixture('runner-crash-worker.ts', ['first'], target.env);
    workers.push(first);
    await first.ready;
    const executionId = first.messages[0]!.executionId as string;
    storage = await target.open();
    const store = storage.executions;
    await until(
      'the task to run',
      () => store.listTasks(executionId),
      (tasks) => tasks[0]?.status === 'running',
    );

    await stopWorker(first, 'SIGKILL');

    const second = spawnFixture('runner-crash-worker.ts', ['second'], target.env);
    workers.push(second);
    await second.ready;
    const pipeline = await until(
      'the pipeline to end',
      () => store.getPipeline(executionId),
      (row) => row?.status === 'completed' || row?.status === 'failed',
    );
    const tasks = await store.listTasks(executionId);
    expect(pipeline?.status).toBe('completed');
    expect(tasks.map((t) => [t.taskId, t.status, t.attempt])).toEqual([
      ['stuck', 'completed', 2],
      ['after', 'completed', 1],
    ]);
    expect(tasks[0]?.failedAttempts).toBe(1);
    expect(tasks[0]?.output?.set).toEqual({ finishedOnAttempt: 2 });

    // Its history names the runner that was killed holding the lease, then the one that completed it.
    const { ORRERY_DATABASE: database, ORRERY_SCHEMA: schema } = target.env;
    const client = await OrreryClient.create({ database, ...(schema === undefined ? {} : { schema }) });
    try {
      const result = await client.getExecutionResult(executionId);
      const history = result.tasks.find((t) => t.taskId === 'stuck')!.attemptHistory;
      expect(history).toEqual([
        {
          attempt: 1,
          runnerId: first.messages[0]!.runnerId,
          startedAt: expect.any(Date),
          endedAt: expect.any(Date),
          outcome: 'lease_expired',
          error: `lease expired (held by ${first.messages[0]!.runnerId})`,
        },
        {
          attempt: 2,
          runnerId: second.messages[0]!.runnerId,
          startedAt: expect.any(Date),
          endedAt: expect.any(Date),
          outcome: 'completed',
        },
      ]);
      expect(history[0]!.endedAt.getTime()).toBeLessThanOrEqual(history[1]!.startedAt.getTime());
    } finally {
      await client.close();
    }
  });

  it('gives them back without using an attempt: with one attempt allowed, each still runs once, only the started one fails', async () => {
    target = make();
    const first = spawnFixture('claim-ahead-crash-worker.ts', ['first', '40'], target.env);
    workers.push(first);
    await until(
      'the first worker to hold tasks claimed ahead',
      async () => first.messages,
      (m) => m.some((x) => 'blocked' in x),
    );
    const { executionIds } = first.messages.find((m) => 'executionIds' in m) as { executionIds: string[] };
    const { blocked, ahead } = first.messages.find((m) => 'blocked' in m) as { blocked: string; ahead: string[] };
    const ranFirst = new Set(first.messages.flatMap((m) => (typeof m.ran === 'string' ? [m.ran] : [])));
    storage = await target.open();
    const store = storage.executions;
    // Leased to the first worker, never started: the claim wrote the attempt, no code ran.
    for (const id of ahead) expect((await store.listTasks(id))[0]).toMatchObject({ status: 'running', attempt: 1 });
    expect(ahead.filter((id) => ranFirst.has(id))).toEqual([]);

    await stopWorker(first, 'SIGKILL');
    const second = spawnFixture('claim-ahead-crash-worker.ts', ['second'], target.env);
    workers.push(second);
    await second.ready;
    const pipelines = await until(
      'every pipeline to end',
      () => Promise.all(executionIds.map((id) => store.getPipeline(id))),
      (rows) => rows.every((row) => row?.status === 'completed' || row?.status === 'failed'),
    );
    const ranSecond = second.messages.flatMap((m) => (typeof m.ran === 'string' ? [m.ran] : []));
    // Only the attempt whose code ran when the worker died counts: one attempt allowed, so it fails.
    expect(pipelines.filter((row) => row!.status === 'failed').map((row) => row!.id)).toEqual([blocked]);
    expect((await store.listTasks(blocked))[0]).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/^lease expired \(held by claim-ahead-first-/),
      // Its one attempt, lost with the worker; the claim that then gave up ran nothing and adds none.
      attemptHistory: [
        expect.objectContaining({
          attempt: 1,
          outcome: 'lease_expired',
          runnerId: expect.stringMatching(/^claim-ahead-first-/),
        }),
      ],
    });
    for (const id of ahead) {
      // Claimed ahead by the first worker and never started: no attempt in the history.
      expect((await store.listTasks(id))[0]).toMatchObject({
        status: 'completed',
        attempt: 2,
        failedAttempts: 0,
        attemptHistory: null,
        runnerId: expect.stringMatching(/^claim-ahead-second-/),
      });
    }
    // Every pipeline's code ran exactly once across both workers (the blocked one's first run included).
    const runs = [...ranFirst, ...ranSecond];
    expect(executionIds.map((id) => runs.filter((r) => r === id).length)).toEqual(executionIds.map(() => 1));
  });
});
