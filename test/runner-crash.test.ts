import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Storage } from '@orrery/core';
import { openPostgresStorage } from '@orrery/postgres-adapter';
import { openSqliteStorage } from '@orrery/sqlite-adapter';
import { afterEach, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName, postgresUrl } from './support/postgres.js';
import { tempSqliteFile } from './support/sqlite.js';

const WORKER = fileURLToPath(new URL('./fixtures/runner-crash-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

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

/** Starts a worker process and resolves with it and the first JSON line it prints. */
async function startWorker(mode: 'first' | 'second', env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', WORKER, mode], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const lines = createInterface({ input: child.stdout! });
  const exited = once(child, 'exit').then(() => {
    throw new Error(`worker ${mode} exited early: ${stderr}`);
  });
  const [line] = (await Promise.race([once(lines, 'line'), exited])) as [string];
  return { child, message: JSON.parse(line) as { executionId?: string; ready?: boolean } };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (performance.now() > deadline) throw new Error(`gave up waiting; last value ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.each(TARGETS)('a runner killed mid-task on $name', ({ make }) => {
  const children: ChildProcess[] = [];
  let target: Target | undefined;
  let storage: Storage | undefined;

  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    }
    await storage?.close();
    await target?.remove();
  });

  it('has its task run again by another runner once the lease expires (attempt 2)', async () => {
    target = make();
    const first = await startWorker('first', target.env);
    children.push(first.child);
    const executionId = first.message.executionId!;
    storage = await target.open();
    const store = storage.executions;
    await until(
      () => store.listTasks(executionId),
      (tasks) => tasks[0]?.status === 'running',
    );

    process.kill(first.child.pid!, 'SIGKILL');
    await once(first.child, 'exit');

    const second = await startWorker('second', target.env);
    children.push(second.child);
    const pipeline = await until(
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
