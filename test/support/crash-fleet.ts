import { OrreryClient } from '@orreryjs/runner';
import pg from 'pg';
import { afterEach } from 'vitest';
import { createRunLog, type RunRow } from '../fixtures/run-log.js';
import { dropSchema, freshSchemaName, postgresUrl } from './postgres.js';
import { spawnFixture, stopWorker, type Worker } from './processes.js';

/** What a crash test works with: a fresh schema with its run log, a client on it, and its runner processes. */
export interface CrashFleet {
  client: OrreryClient;
  /** Starts `test/fixtures/<fixture>` on the schema; killed (SIGKILL) after the test if still alive. */
  spawn(fixture: string, args: string[]): Worker;
  /** Every row of the run log the tasks wrote (see fixtures/run-log.ts). */
  read(): Promise<RunRow[]>;
}

/**
 * Sets up, per test, the Postgres schema, run log, client and processes of a crash test, and
 * tears them all down after it: call once in a `describe`, then `open()` in each test.
 */
export function useCrashFleet(): { open(): Promise<CrashFleet> } {
  const workers: Worker[] = [];
  let client: OrreryClient | undefined;
  let db: pg.Client | undefined;
  let schema: string | undefined;

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => stopWorker(worker, 'SIGKILL')));
    await client?.close();
    await db?.end();
    if (schema !== undefined) await dropSchema(schema);
    client = undefined;
    db = undefined;
    schema = undefined;
  });

  return {
    async open() {
      const opened = freshSchemaName();
      schema = opened;
      const env = { ORRERY_DATABASE: postgresUrl(), ORRERY_SCHEMA: opened };
      client = await OrreryClient.create({ database: postgresUrl(), schema: opened });
      const log = new pg.Client({ connectionString: postgresUrl(), user: 'postgres' });
      db = log;
      await log.connect();
      await createRunLog(log, opened);
      return {
        client,
        spawn(fixture, args) {
          const worker = spawnFixture(fixture, args, env);
          workers.push(worker);
          return worker;
        },
        read: async () =>
          (
            await log.query<RunRow>(
              `SELECT execution_id, task_id, label, event, attempt, runner_id, at FROM "${opened}".run_log`,
            )
          ).rows,
      };
    },
  };
}
