import type { Storage } from '@orreryjs/core';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { oneTaskPipelines } from '../../../test/support/pipelines.js';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../test/support/postgres.js';
import { openPostgresStorage } from '../src/index.js';
import { PLAN_SETTINGS } from '../src/open.js';

const schemas: string[] = [];
afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
});

/** Creates `count` one-task pipelines, then claims and finishes them in batches of `limit`. */
async function drain(storage: Storage, count: number, limit: number): Promise<void> {
  const runnerId = 'plans-test';
  await storage.executions.createPipelines(oneTaskPipelines(count, new Date()));
  for (let left = count; left > 0; left -= limit) {
    const claimed = await storage.executions.claimTasks({
      runnerId,
      registered: [{ workflowName: 'w', taskIds: ['t'] }],
      limit,
      leaseMs: 60_000,
      now: new Date(),
    });
    const { finished } = await storage.executions.finishTasks(
      claimed.map(({ task, pipeline }) => ({
        taskExecutionId: task.id,
        pipelineExecutionId: pipeline.id,
        taskId: task.taskId,
        runnerId,
        attempt: task.attempt,
        outcome: { status: 'completed', output: { set: {}, deleted: [] } },
        dependents: [],
        now: new Date(),
      })),
    );
    expect(finished.every((result) => result.finishedPipeline?.status === 'completed')).toBe(true);
  }
}

/**
 * Sequential scans of `pipeline_executions` so far, read once the backends that inserted
 * `inserted` rows into `table` have reported their counters (backends report lazily; closing
 * a storage ends its connections, which report on exit).
 */
async function pipelineSeqScans(schema: string, table: string, inserted: number): Promise<number> {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    for (;;) {
      const { rows } = await client.query<{ seq_scan: string; n_tup_ins: string }>(
        `SELECT (SELECT seq_scan FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'pipeline_executions'),
           (SELECT n_tup_ins FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2)`,
        [schema, table],
      );
      if (Number(rows[0]?.n_tup_ins ?? 0) >= inserted) return Number(rows[0]!.seq_scan);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await client.end();
  }
}

describe('plans of the hot statements (Postgres)', () => {
  it('keeps index plans made while the tables were almost empty: claim and finish never scan pipelines whole', async () => {
    const schema = freshSchemaName();
    schemas.push(schema);
    // Migrating scans the new tables (index builds, constraint checks): counted first, apart.
    await (await openPostgresStorage({ connectionString: postgresUrl(), schema })).close();
    const afterMigrations = await pipelineSeqScans(schema, '__orrery_migrations', 1);
    // One connection, so that every statement runs on the connection that cached its plans.
    const storage = await openPostgresStorage({ connectionString: postgresUrl(), schema, pool: { max: 1 } });
    try {
      // Six calls on a nearly empty schema: Postgres keeps a generic plan for each statement from here on.
      await drain(storage, 6, 1);
      // Then the table grows past what a sequential scan could serve cheaply.
      await drain(storage, 2_000, 10);
    } finally {
      await storage.close();
    }
    expect(await pipelineSeqScans(schema, 'pipeline_executions', 2_006)).toBe(afterMigrations);
  });

  it('never JIT-compiles: a sequential scan no index can replace is not compiled on every call', async () => {
    const schema = freshSchemaName();
    schemas.push(schema);
    await (await openPostgresStorage({ connectionString: postgresUrl(), schema })).close();
    const client = new pg.Client({ connectionString: postgresUrl() });
    await client.connect();
    try {
      const { rows } = await client.query<{ available: boolean }>('SELECT pg_jit_available() AS available');
      // The shape of the retention sweep's runners statement: no index serves heartbeat_at.
      const compiled = async () => {
        const plan = await client.query(
          `EXPLAIN (ANALYZE, FORMAT JSON) DELETE FROM "${schema}".runners WHERE heartbeat_at < now() - interval '1 day'`,
        );
        return 'JIT' in plan.rows[0]['QUERY PLAN'][0];
      };
      // Sequential scans off alone: the scan is costed as disabled, far above jit_above_cost.
      await client.query('SET enable_seqscan = off');
      expect(await compiled()).toBe(rows[0]!.available);
      await client.query(PLAN_SETTINGS);
      expect(await compiled()).toBe(false);
    } finally {
      await client.end();
    }
  });
});
