import { DatabaseError, newId, occurrenceId, type ScheduleRow, type Storage } from '@orreryjs/core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ONE_TASK_WORKFLOW, oneTaskPipelines } from '../../../test/support/pipelines.js';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../test/support/postgres.js';
import { openPostgresStorage } from '../src/index.js';

const schema = freshSchemaName();
let storage: Storage;
let client: pg.Client;
beforeAll(async () => {
  storage = await openPostgresStorage({ connectionString: postgresUrl(), schema });
  client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  await client.query(`SET search_path = ${schema}`);
});
afterAll(async () => {
  await client.end();
  await storage.close();
  await dropSchema(schema);
});

const NOW = new Date('2026-03-04T05:06:07.890Z');

function schedule(overrides: Partial<ScheduleRow> = {}): ScheduleRow {
  return {
    id: newId(),
    name: `s_${newId().slice(0, 8)}`,
    workflowName: 'wf',
    cronExpression: '0 0 * * *',
    timezone: 'UTC',
    enabled: true,
    context: { region: 'eu' },
    catchupPolicy: 'run_once',
    overlapPolicy: 'allow',
    jitterMs: 0,
    pauseOnFailure: false,
    enabledAt: NOW,
    maxRuns: null,
    runCount: 0,
    dst: null,
    note: null,
    startAt: null,
    endAt: null,
    nextRunAt: NOW,
    lastRunAt: null,
    version: 1,
    createdAt: NOW,
    updatedAt: NOW,
    ...overrides,
  };
}

/** The plan Postgres uses for `text` as a prepared statement with a generic plan, as the stores run theirs. */
async function genericPlan(text: string, types: string[]): Promise<string> {
  const name = `plan_${newId().slice(0, 8)}`;
  await client.query('SET plan_cache_mode = force_generic_plan');
  await client.query(`PREPARE ${name}(${types.join(', ')}) AS ${text}`);
  const nulls = types.map(() => 'NULL').join(', ');
  const rows = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE ${name}(${nulls})`);
  await client.query(`DEALLOCATE ${name}`);
  return rows.rows.map((row) => row['QUERY PLAN']).join('\n');
}

/** The heap page of each row of `table`, by pipeline id (one task per pipeline). */
async function pages(table: 'pipeline_executions' | 'task_executions'): Promise<Map<string, number>> {
  const id = table === 'task_executions' ? 'pipeline_execution_id' : 'id';
  const { rows } = await client.query<{ id: string; page: number }>(
    `SELECT ${id} AS id, (ctid::text::point)[0]::int AS page FROM ${table}`,
  );
  return new Map(rows.map((row) => [row.id, row.page]));
}

describe('Postgres storage format', () => {
  it('declares ids as uuid, instants as timestamptz(3), JSON as jsonb and flags as boolean', async () => {
    const columns = await client.query<{ column_name: string; data_type: string; datetime_precision: number | null }>(
      `SELECT column_name, data_type, datetime_precision FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = 'cron_executions' ORDER BY ordinal_position`,
      [schema],
    );
    const byName = Object.fromEntries(columns.rows.map((row) => [row.column_name, row]));
    expect(byName.id).toMatchObject({ data_type: 'uuid' });
    expect(byName.scheduled_time).toMatchObject({ data_type: 'timestamp with time zone', datetime_precision: 3 });
    expect(byName.context).toMatchObject({ data_type: 'jsonb' });
    expect(byName.recovered).toMatchObject({ data_type: 'boolean' });
  });

  it('stores native values that other Postgres clients can read', async () => {
    const row = schedule();
    await storage.cron.insertSchedule(row);
    const raw = await client.query(
      `SELECT id::text AS id, next_run_at = '2026-03-04T05:06:07.890Z'::timestamptz AS exact,
       context->>'region' AS region, enabled FROM cron_schedules WHERE id = $1`,
      [row.id],
    );
    expect(raw.rows[0]).toEqual({ id: row.id, exact: true, region: 'eu', enabled: true });
  });

  it('keeps JSON that jsonb cannot hold as a jsonb string of its text, and reads it back unchanged', async () => {
    const context = { nul: 'a\u0000b', lone: 'x\ud800y', plain: 1 };
    const row = schedule({ context });
    await storage.cron.insertSchedule(row);
    const raw = await client.query(`SELECT jsonb_typeof(context) AS kind FROM cron_schedules WHERE id = $1`, [row.id]);
    expect(raw.rows[0]).toEqual({ kind: 'string' });
    expect((await storage.cron.getSchedule(row.id))!.context).toEqual(context);
  });

  it('gives the claim (both priority walks) and due queries their partial indexes, as generic plans', async () => {
    const claim = await genericPlan(
      `SELECT t.id FROM task_executions t WHERE coalesce(t.status = 'ready' AND t.priority = 0, false) AND t.available_at <= $1
       ORDER BY t.available_at LIMIT $2 FOR NO KEY UPDATE SKIP LOCKED`,
      ['timestamptz', 'int'],
    );
    expect(claim).toContain('task_executions_claim_idx');
    expect(claim).not.toContain('Sort');
    // Off for the plan of an empty table, as for the due query: a table of any size walks the index (its order is the LIMIT's).
    await client.query('SET enable_seqscan = off');
    const byPriority = await genericPlan(
      `SELECT t.id FROM task_executions t WHERE coalesce(t.status = 'ready' AND t.priority <> 0, false) AND t.available_at <= $1
       ORDER BY t.priority DESC, t.available_at LIMIT $2 FOR NO KEY UPDATE SKIP LOCKED`,
      ['timestamptz', 'int'],
    );
    expect(byPriority).toContain('task_executions_priority_claim_idx');
    const due = await genericPlan(
      `SELECT id FROM cron_schedules WHERE enabled AND next_run_at <= $1 ORDER BY next_run_at LIMIT $2
       FOR NO KEY UPDATE SKIP LOCKED`,
      ['timestamptz', 'int'],
    );
    await client.query('RESET enable_seqscan');
    expect(due).toContain('cron_schedules_due_idx');
  });

  it('has no foreign key from the ledger to schedules, so deleting a schedule keeps its history', async () => {
    const row = schedule();
    await storage.cron.insertSchedule(row);
    const occurrence = {
      id: occurrenceId(row.id, NOW),
      scheduleId: row.id,
      workflowName: 'wf',
      context: {},
      scheduledTime: NOW,
      fireAt: NOW,
      claimedAt: NOW,
      claimedBy: 'r1',
      status: 'claimed' as const,
      source: 'schedule' as const,
      missedCount: 0,
    };
    await storage.cron.insertOccurrences([occurrence]);
    expect(await storage.cron.deleteSchedule(row.id)).toBe(true);
    expect(await storage.cron.getOccurrence(occurrence.id)).toMatchObject({ scheduleId: row.id });
    const fks = await client.query(
      `SELECT conname FROM pg_constraint WHERE contype = 'f' AND conrelid = to_regclass('cron_executions')`,
    );
    expect(fks.rows).toEqual([]);
  });

  it('commits a failure whose message holds NUL, which text cannot store, with U+FFFD in its place', async () => {
    const pipelineId = newId();
    const workflowName = `wf_${newId().slice(0, 8)}`;
    await storage.executions.createPipeline({
      id: pipelineId,
      workflowName,
      workflowVersion: 'v1',
      input: {},
      idempotencyKey: null,
      scheduledTime: null,
      now: NOW,
      tasks: [{ id: newId(), taskId: 'a', position: 0, pendingDeps: 0 }],
    });
    const registered = [{ workflowName, taskIds: ['a'] }];
    const [claimed] = await storage.executions.claimTasks({
      runnerId: 'r1',
      registered,
      limit: 1,
      leaseMs: 1000,
      now: NOW,
    });
    const result = (
      await storage.executions.finishTasks([
        {
          runnerId: 'r1',
          taskExecutionId: claimed!.task.id,
          pipelineExecutionId: pipelineId,
          taskId: claimed!.task.taskId,
          attempt: 1,
          outcome: { status: 'failed', error: 'bad\u0000byte' },
          dependents: [],
          now: NOW,
        },
      ])
    ).finished[0]!;
    expect(result.finishedPipeline).toMatchObject({ status: 'failed', error: 'task a failed: bad\uFFFDbyte' });
    expect((await storage.executions.listTasks(pipelineId))[0]!.error).toBe('bad\uFFFDbyte');
  });

  it('wraps a driver failure as a DatabaseError naming the port method, with the driver error as cause', async () => {
    const row = schedule({ name: null });
    await storage.cron.insertSchedule(row);
    const failure = await storage.executions
      .createPipeline({
        id: row.id,
        workflowName: 'wf',
        workflowVersion: 'v1',
        input: {},
        idempotencyKey: null,
        scheduledTime: null,
        now: NOW,
        tasks: [
          { id: row.id, taskId: 'a', position: 0, pendingDeps: 0 },
          { id: row.id, taskId: 'a', position: 1, pendingDeps: 0 },
        ],
      })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DatabaseError);
    expect((failure as Error).message).toMatch(/^createPipeline failed: duplicate key value/);
    expect((failure as Error).cause).toBeInstanceOf(pg.DatabaseError);
  });
  // The execution tables' fillfactor (drizzle/0009) leaves each page room for the new versions a
  // claim writes: HOT for the pipeline rows, no lock record and full tuple image of a move for the tasks.
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
    const { rows } = await client.query<{ relname: string }>(
      `SELECT relname FROM pg_class WHERE relnamespace = $1::regnamespace AND 'fillfactor=40' = ANY(reloptions)
       ORDER BY relname`,
      [schema],
    );
    expect(rows.map((row) => row.relname)).toEqual(['pipeline_executions', 'task_executions']);
  });
});
