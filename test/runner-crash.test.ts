import type { Storage } from '@orreryjs/core';
import { openPostgresStorage } from '@orreryjs/postgres-adapter';
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
  });
});
