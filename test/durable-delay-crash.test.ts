import { OrreryClient } from '@orreryjs/runner';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createRunLog, type RunRow } from './fixtures/run-log.js';
import { dropSchema, freshSchemaName, postgresUrl } from './support/postgres.js';
import { spawnFixture, stopWorker, until, type Worker } from './support/processes.js';

/** `later`'s delay in delay-worker.ts (not imported: importing the fixture would start its runner). */
const DELAY_MS = 1_500;
const PIPELINES = 5;

describe('a durable delay across kill -9 of its runner', () => {
  const workers: Worker[] = [];
  let client: OrreryClient | undefined;
  let db: pg.Client | undefined;
  let schema: string | undefined;

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => stopWorker(worker, 'SIGKILL')));
    await client?.close();
    await db?.end();
    if (schema !== undefined) await dropSchema(schema);
  });

  it('runs the delayed task once, on the runner that took over, no earlier than its delay', {
    timeout: 120_000,
  }, async () => {
    schema = freshSchemaName();
    const env = { ORRERY_DATABASE: postgresUrl(), ORRERY_SCHEMA: schema };
    client = await OrreryClient.create({ database: postgresUrl(), schema });
    db = new pg.Client({ connectionString: postgresUrl(), user: 'postgres' });
    await db.connect();
    await createRunLog(db, schema);
    const first = spawnFixture('delay-worker.ts', ['delay-first'], env);
    workers.push(first);
    await first.ready;

    const executions = [];
    for (let n = 0; n < PIPELINES; n += 1) executions.push(await client.executeAsync('sleeper', { n }));
    const read = async () =>
      (await db!.query<RunRow>(`SELECT execution_id, task_id, event, runner_id, at FROM "${schema}".run_log`)).rows;
    // Every pipeline's first task done, its later task asleep: then the runner dies.
    await until(
      'every first task ended',
      read,
      (rows) => rows.filter((r) => r.task_id === 'first' && r.event === 'end').length === PIPELINES,
    );
    await stopWorker(first, 'SIGKILL');
    const second = spawnFixture('delay-worker.ts', ['delay-second'], env);
    workers.push(second);
    await second.ready;

    const results = await Promise.all(executions.map((execution) => execution.wait({ timeoutMs: 60_000 })));
    expect(results.map((result) => result.status)).toEqual(Array(PIPELINES).fill('completed'));
    const rows = await read();
    for (const execution of executions) {
      const firstEnd = rows.find((r) => r.execution_id === execution.id && r.task_id === 'first' && r.event === 'end')!;
      const laterStarts = rows.filter(
        (r) => r.execution_id === execution.id && r.task_id === 'later' && r.event === 'start',
      );
      expect(laterStarts.map((r) => r.runner_id)).toEqual(['delay-second']);
      expect(laterStarts[0]!.at.getTime() - firstEnd.at.getTime()).toBeGreaterThanOrEqual(DELAY_MS);
    }
  });
});
