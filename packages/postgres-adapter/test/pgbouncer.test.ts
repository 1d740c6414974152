import { newId, type Storage } from '@orreryjs/core';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName, pgbouncerUrl, postgresUrl } from '../../../test/support/postgres.js';
import { openPostgresStorage } from '../src/index.js';

const TABLES = ['pipeline_executions', 'task_executions', 'cron_schedules', 'cron_executions', 'runners'];
const schemas: string[] = [];
const opened: Storage[] = [];

afterAll(async () => {
  for (const storage of opened) await storage.close();
  for (const schema of schemas) await dropSchema(schema);
});

/** Runs one query on a direct connection to the server, past PgBouncer. */
async function direct<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Opens a fresh tenant schema through PgBouncer and writes one row to each of its tables. */
async function tenant() {
  const schema = freshSchemaName();
  schemas.push(schema);
  const storage = await openPostgresStorage({
    connectionString: pgbouncerUrl(),
    schema,
    preparedStatements: false,
    listen: { database: postgresUrl() },
  });
  opened.push(storage);
  const now = new Date('2026-05-06T07:08:09.010Z');
  const ids = { schedule: newId(), pipeline: newId(), task: newId(), occurrence: newId(), runner: `runner-${schema}` };
  await storage.cron.insertSchedule({
    id: ids.schedule,
    name: `nightly-${schema}`,
    workflowName: 'wf',
    cronExpression: '0 0 * * * *',
    timezone: 'UTC',
    enabled: true,
    context: {},
    catchupPolicy: 'skip',
    overlapPolicy: 'allow',
    jitterMs: 0,
    pauseOnFailure: false,
    enabledAt: now,
    maxRuns: null,
    runCount: 0,
    dst: null,
    note: null,
    startAt: null,
    endAt: null,
    nextRunAt: now,
    lastRunAt: null,
    version: 1,
    createdAt: now,
    updatedAt: now,
  });
  await storage.cron.insertOccurrences([
    {
      id: ids.occurrence,
      scheduleId: ids.schedule,
      workflowName: 'wf',
      context: {},
      scheduledTime: now,
      fireAt: now,
      claimedAt: now,
      claimedBy: ids.runner,
      status: 'claimed',
      source: 'manual',
      missedCount: 0,
    },
  ]);
  await storage.executions.createPipeline({
    id: ids.pipeline,
    workflowName: 'wf',
    workflowVersion: '1',
    input: { tenant: schema },
    idempotencyKey: null,
    scheduledTime: null,
    now,
    tasks: [{ id: ids.task, taskId: 't', position: 0, pendingDeps: 0 }],
  });
  await storage.runners.heartbeat({
    id: ids.runner,
    hostname: 'h',
    pid: 1,
    workflows: ['wf'],
    startedAt: now,
    heartbeatAt: now,
  });
  return { schema, storage, ids };
}

/** The ids of `table` in `schema` among `keys` (UUIDs or, for runners, text). */
async function rowsIn(schema: string, table: string, keys: string[]): Promise<string[]> {
  const [found] = await direct<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [`"${schema}"."${table}"`]);
  if (found?.t == null) return [];
  const rows = await direct<{ id: string }>(
    `SELECT id::text AS id FROM "${schema}"."${table}" WHERE id::text = ANY($1)`,
    [keys],
  );
  return rows.map((row) => row.id).sort();
}

describe('PgBouncer in transaction mode', () => {
  it("keeps two tenants' tables and rows in their own schemas, and none in public", async () => {
    const a = await tenant();
    const b = await tenant();
    const keysOf = (t: typeof a) => [t.ids.pipeline, t.ids.task, t.ids.schedule, t.ids.occurrence, t.ids.runner];
    const expected = (t: typeof a) => ({
      pipeline_executions: [t.ids.pipeline],
      task_executions: [t.ids.task],
      cron_schedules: [t.ids.schedule],
      cron_executions: [t.ids.occurrence],
      runners: [t.ids.runner],
    });
    for (const [own, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const tables = await direct<{ name: string }>(
        'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1',
        [own.schema],
      );
      expect(tables.map((t) => t.name)).toEqual(expect.arrayContaining(TABLES));
      const held: Record<string, string[]> = {};
      for (const table of TABLES) held[table] = await rowsIn(own.schema, table, [...keysOf(own), ...keysOf(other)]);
      expect(held).toEqual(expected(own));
      // Each store reads its own tenant back through PgBouncer too.
      expect((await own.storage.executions.getPipeline(own.ids.pipeline))?.input).toEqual({ tenant: own.schema });
      expect(await own.storage.executions.getPipeline(other.ids.pipeline)).toBeNull();
    }
    for (const table of TABLES) expect(await rowsIn('public', table, [...keysOf(a), ...keysOf(b)])).toEqual([]);
  });
});
