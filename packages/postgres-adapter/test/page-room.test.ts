import type { Storage } from '@orreryjs/core';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ONE_TASK_WORKFLOW, oneTaskPipelines } from '../../../test/support/pipelines.js';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../test/support/postgres.js';
import { openPostgresStorage } from '../src/index.js';

/*
 * The fillfactor of the execution tables (drizzle/0009) leaves each page room for the new
 * versions a claim writes, so they stay on their rows' pages: HOT for the pipeline rows, and
 * without the lock record and full tuple image of a move for the task rows.
 */

const schema = freshSchemaName();
let storage: Storage;
let client: pg.Client;
beforeAll(async () => {
  storage = await openPostgresStorage({ connectionString: postgresUrl(), schema });
  client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
});
afterAll(async () => {
  await client.end();
  await storage.close();
  await dropSchema(schema);
});

/** The heap page of each row of `table`, by id (`pipeline_execution_id` for tasks: one task each). */
async function pages(table: 'pipeline_executions' | 'task_executions'): Promise<Map<string, number>> {
  const id = table === 'task_executions' ? 'pipeline_execution_id' : 'id';
  const { rows } = await client.query<{ id: string; page: number }>(
    `SELECT ${id} AS id, (ctid::text::point)[0]::int AS page FROM "${schema}".${table}`,
  );
  return new Map(rows.map((row) => [row.id, row.page]));
}

it('a claim of many consecutive rows writes their new versions on the pages the rows were on', async () => {
  // 60 rows span several pages at any fillfactor; without room, a full page's rows move on the claim.
  const count = 60;
  await storage.executions.createPipelines(oneTaskPipelines(count, new Date()));
  const before = { pipelines: await pages('pipeline_executions'), tasks: await pages('task_executions') };
  expect(new Set(before.tasks.values()).size).toBeGreaterThan(1);

  const claimed = await storage.executions.claimTasks({
    runnerId: 'page-room-test',
    registered: [ONE_TASK_WORKFLOW],
    limit: count,
    leaseMs: 60_000,
    now: new Date(),
  });

  expect(claimed).toHaveLength(count);
  expect(await pages('pipeline_executions')).toEqual(before.pipelines);
  expect(await pages('task_executions')).toEqual(before.tasks);
  const { rows } = await client.query<{ relname: string; reloptions: string[] }>(
    `SELECT relname, reloptions FROM pg_class WHERE relnamespace = $1::regnamespace AND relname LIKE '%_executions'
     ORDER BY relname`,
    [schema],
  );
  expect(rows.filter((row) => row.reloptions?.includes('fillfactor=40')).map((row) => row.relname)).toEqual([
    'pipeline_executions',
    'task_executions',
  ]);
});
