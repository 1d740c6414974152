import { OrreryClient } from '@orreryjs/runner';
import { afterEach, describe, expect, it } from 'vitest';
import { ADAPTERS, type TestDatabase } from '../packages/runner/test/support.js';
import { spawnFixture, stopWorker, type Worker } from './support/processes.js';

/** The steps the client process printed, by name. */
function steps(worker: Worker): Record<string, Record<string, unknown>> {
  return Object.fromEntries(worker.messages.map((message) => [message.step as string, message]));
}

describe.each(ADAPTERS)('a client process without task code and a worker process on $name', ({ open }) => {
  const workers: Worker[] = [];
  let database: TestDatabase | undefined;

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => stopWorker(worker, 'SIGKILL')));
    await database?.remove();
  });

  it('starts, waits for, cancels and inspects pipelines the worker runs, and adds a schedule that fires in the worker', {
    timeout: 120_000,
  }, async () => {
    database = open();
    const env = {
      ORRERY_DATABASE: database.config.database!,
      ...(database.config.schema === undefined ? {} : { ORRERY_SCHEMA: database.config.schema }),
    };
    const worker = spawnFixture('client-worker.ts', ['client-test-worker'], env);
    workers.push(worker);
    await worker.ready;

    const client = spawnFixture('client-process.ts', [], env);
    workers.push(client);
    const { code } = await client.exited;
    expect(code, client.stderr()).toBe(0);
    const s = steps(client);

    expect(s.workflows!.workflows).toEqual([
      { name: 'greet', version: expect.any(String), tasks: ['hello', 'shout'] },
      { name: 'hold', version: expect.any(String), tasks: ['wait'] },
    ]);
    expect(s.runners!.runners).toEqual([{ id: 'client-test-worker', alive: true, workflows: ['greet', 'hold'] }]);
    expect(s.execute).toMatchObject({
      status: 'completed',
      workflowVersion: (s.workflows!.workflows as { version: string }[])[0]!.version,
      finalContext: { name: 'Ada', greeting: 'hello Ada', shout: 'HELLO ADA' },
      tasks: [
        ['hello', 'completed'],
        ['shout', 'completed'],
      ],
    });
    expect(s.cancel).toMatchObject({ waited: 'cancelled', status: 'cancelled', tasks: [['wait', 'cancelled']] });
    expect(s.unknown).toMatchObject({ code: 'WORKFLOW_NOT_FOUND', written: 0 });
    expect(s.unknown!.message).toMatch(/"nope".*known: greet, hold/);
    expect(s.schedule).toEqual({ step: 'schedule', linked: true, status: 'completed', shout: 'HELLO CRON' });
    expect(s.done).toBeDefined();

    const { code: workerCode } = await stopWorker(worker);
    expect(workerCode, worker.stderr()).toBe(0);
  });

  it('keeps a pipeline with runAt pending until then: the worker in another process starts none of its tasks before', {
    timeout: 120_000,
  }, async () => {
    database = open();
    const env = {
      ORRERY_DATABASE: database.config.database!,
      ...(database.config.schema === undefined ? {} : { ORRERY_SCHEMA: database.config.schema }),
    };
    const worker = spawnFixture('client-worker.ts', ['run-at-worker'], env);
    workers.push(worker);
    await worker.ready;
    const client = await OrreryClient.create(database.config);
    try {
      const runAt = new Date(Date.now() + 2_000);
      const execution = await client.executeAsync('greet', { name: 'Later' }, { runAt });
      const status = await execution.status();
      // Read before runAt, the status can only be pending (read later, it proves nothing either way).
      if (Date.now() < runAt.getTime()) expect(status).toBe('pending');
      const result = await execution.wait({ timeoutMs: 60_000 });
      expect(result.status).toBe('completed');
      expect(result.finalContext).toMatchObject({ shout: 'HELLO LATER' });
      for (const task of result.tasks) expect(task.startedAt!.getTime()).toBeGreaterThanOrEqual(runAt.getTime());
    } finally {
      await client.close();
    }
    expect((await stopWorker(worker)).code, worker.stderr()).toBe(0);
  });
});
