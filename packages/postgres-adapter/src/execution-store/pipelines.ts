import {
  DatabaseError,
  DEFAULT_PRIORITY,
  inKeyLockOrder,
  isQueued,
  type NewPipeline,
  newTaskStatus,
  type PipelineFilter,
  type PipelineRow,
} from '@orreryjs/core';
import { and, asc, desc, eq, getTableColumns, gte, isNull, lte, type SQL, sql } from 'drizzle-orm';
import {
  bind,
  canonicalUuid,
  dateToIso,
  decodeRow,
  encodeJson,
  encodeUuidList,
  inTextList,
  inUuidList,
  renderOnce,
} from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb, PostgresHandle } from '../transaction.js';
import { queueNewPipelines } from './admission.js';

import { taskRowColumns } from './conditions.js';
/*
 * Pipelines and their tasks: created together (idempotent by key), read by id, by key, by page.
 */

/** Builds the pipeline statements once; each is named, so each connection parses it once. */
export function preparePipelines(handle: PostgresHandle) {
  const { db, tables, named } = handle;
  const { pipelineExecutions: p, taskExecutions: t } = tables;
  return {
    insertPipelines: prepareInsertPipelines(handle),
    selectPipeline: db
      .select()
      .from(p)
      .where(eq(p.id, bind(p.id, 'id')))
      .prepare(named('orrery_select_pipeline')),
    selectPipelineByKey: db
      .select()
      .from(p)
      .where(eq(p.idempotencyKey, bind(p.idempotencyKey, 'key')))
      .prepare(named('orrery_select_pipeline_by_key')),
    // A range on the primary key: the ids from the prefix padded with 0s to it padded with fs.
    selectPipelineIdsByPrefix: db
      .select({ id: p.id })
      .from(p)
      .where(and(gte(p.id, bind(p.id, 'first')), lte(p.id, bind(p.id, 'last'))))
      .orderBy(asc(p.id))
      .limit(sql.placeholder('limit'))
      .prepare(named('orrery_select_pipeline_ids_by_prefix')),
    selectTasks: db
      .select(taskRowColumns(tables))
      .from(t)
      // Instances of map tasks are listed apart (see maps.ts).
      .where(and(eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineId')), isNull(t.mapOf)))
      .orderBy(asc(t.position))
      .prepare(named('orrery_select_tasks')),
  };
}

export type PipelineStatements = ReturnType<typeof preparePipelines>;

/** One page of pipelines, newest first. */
export function selectPipelines(db: PostgresDb, tables: PostgresTables, filter: PipelineFilter) {
  const p = tables.pipelineExecutions;
  return (
    db
      .select()
      .from(p)
      .where(
        and(
          filter.workflowName === undefined ? undefined : eq(p.workflowName, filter.workflowName),
          filter.status === undefined ? undefined : eq(p.status, filter.status),
          filter.scheduleId === undefined ? undefined : eq(p.scheduleId, filter.scheduleId),
        ),
      )
      // Postgres has no insertion order to break ties between executions created in the same millisecond: the id does.
      .orderBy(desc(p.createdAt), desc(p.id))
      .limit(filter.limit)
      .offset(filter.offset)
  );
}

/**
 * The statement of {@link createPipelinesIn}: pipelines and their tasks inserted in one
 * statement; returns the pipelines inserted (a taken key inserts nothing). Raw SQL: rows from
 * parallel arrays (unnest) feeding two inserts chained by a CTE, one statement for any batch.
 * Rendered once and sent under one name, so each connection parses and plans it once.
 */
function insertPipelinesSql({ pipelineExecutions: p, taskExecutions: t }: PostgresTables): SQL {
  return sql`WITH inserted AS (
      INSERT INTO ${p} (id, workflow_name, workflow_version, status, input, idempotency_key, scheduled_time,
        schedule_id, remaining_tasks, failed_tasks, created_at, updated_at, trace_context, run_at, priority, concurrency)
      SELECT u.id, u.workflow_name, u.workflow_version, 'pending', u.input::jsonb, u.idempotency_key,
        u.scheduled_time, u.schedule_id, u.remaining_tasks, 0, u.now, u.now, u.trace_context::jsonb, u.run_at, u.priority,
        u.concurrency::jsonb
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::uuid[],
        $8::int[], $9::timestamptz[], $16::text[], $17::timestamptz[], $18::int[], $19::text[])
        AS u(id, workflow_name, workflow_version, input, idempotency_key, scheduled_time, schedule_id, remaining_tasks, now,
          trace_context, run_at, priority, concurrency)
      ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
      RETURNING *
    ), tasks AS (
      INSERT INTO ${t} (id, pipeline_execution_id, workflow_name, task_id, position, status, attempt,
        failed_attempts, pending_deps, available_at, delay_ms, wait_signal, priority, updated_at)
      SELECT v.id, i.id, i.workflow_name, v.task_id, v.position, v.status, 0, 0, v.pending_deps,
        coalesce(i.run_at, i.created_at) + v.delay_ms * interval '1 millisecond', v.delay_ms, v.wait_signal, i.priority,
        i.created_at
      FROM unnest($10::uuid[], $11::uuid[], $12::text[], $13::int[], $14::text[], $15::int[], $20::int[], $21::text[])
        AS v(id, pipeline_id, task_id, position, status, pending_deps, delay_ms, wait_signal)
      JOIN inserted i ON i.id = v.pipeline_id
    )
    SELECT to_json(i) AS row FROM inserted i`;
}

/** The parameters of {@link insertPipelinesSql} for `pipelines`, in order. */
function insertPipelinesValues(pipelines: readonly NewPipeline[]): unknown[] {
  const tasks = pipelines.flatMap((pipeline) => pipeline.tasks.map((task) => ({ pipeline, task })));
  return [
    encodeUuidList(pipelines.map((x) => x.id)),
    pipelines.map((x) => x.workflowName),
    pipelines.map((x) => x.workflowVersion),
    pipelines.map((x) => encodeJson(x.input)),
    pipelines.map((x) => x.idempotencyKey),
    pipelines.map((x) => (x.scheduledTime === null ? null : dateToIso(x.scheduledTime))),
    pipelines.map((x) => (x.scheduleId == null ? null : canonicalUuid(x.scheduleId))),
    pipelines.map((x) => x.tasks.length),
    pipelines.map((x) => dateToIso(x.now)),
    encodeUuidList(tasks.map((x) => x.task.id)),
    encodeUuidList(tasks.map((x) => x.pipeline.id)),
    tasks.map((x) => x.task.taskId),
    tasks.map((x) => x.task.position),
    tasks.map((x) => newTaskStatus(x.task.pendingDeps, isQueued(x.pipeline))),
    tasks.map((x) => x.task.pendingDeps),
    pipelines.map((x) => (x.traceContext == null ? null : encodeJson(x.traceContext))),
    pipelines.map((x) => (x.runAt == null ? null : dateToIso(x.runAt))),
    pipelines.map((x) => x.priority ?? DEFAULT_PRIORITY),
    pipelines.map((x) => (isQueued(x) ? encodeJson(x.concurrency) : null)),
    tasks.map((x) => x.task.delayMs ?? 0),
    tasks.map((x) => x.task.waitSignal ?? null),
  ];
}

/** The insert of {@link createPipelinesIn}, on the pool or inside a caller's transaction (`db`). */
export function prepareInsertPipelines({ tables, named }: PostgresHandle) {
  const query = renderOnce(insertPipelinesSql(tables));
  const name = named('orrery_insert_pipelines');
  return {
    getQuery: () => ({ sql: query() }),
    async execute(db: PostgresDb, pipelines: readonly NewPipeline[]): Promise<Array<Record<string, unknown>>> {
      const { rows } = await db.$client.query<{ row: Record<string, unknown> }>({
        name,
        text: query(),
        values: insertPipelinesValues(pipelines),
      });
      return rows.map(({ row }) => row);
    },
  };
}

export type InsertPipelines = ReturnType<typeof prepareInsertPipelines>;

/**
 * Creates pipelines with their tasks in one statement (its own transaction, or part of the
 * caller's `db` transaction, which pipelines of concurrency groups need: their queueing and
 * admission follow the insert, see {@link queueNewPipelines}); a pipeline whose idempotency key is taken, before or earlier in
 * the batch, is not created and the key's holder stands for it (read only when that happens).
 * Results in input order. `createPipeline(s)` and the cron store's in-transaction handoff use it.
 */
export async function createPipelinesIn(
  db: PostgresDb,
  tables: PostgresTables,
  insert: InsertPipelines,
  pipelines: readonly NewPipeline[],
): Promise<Array<{ pipeline: PipelineRow; created: boolean }>> {
  if (pipelines.length === 0) return [];
  const p = tables.pipelineExecutions;
  // Keys taken in one global order, so that two batches sharing keys never deadlock; the
  // results below are matched back by id and key, in input order.
  const rows = await insert.execute(db, inKeyLockOrder(pipelines));
  const created = new Map(
    rows.map((row) => decodeRow<PipelineRow>(getTableColumns(p), row)).map((row) => [row.id, row]),
  );
  const queued = pipelines.filter((pipeline) => created.has(pipeline.id) && isQueued(pipeline));
  if (queued.length > 0) {
    // Rows an onLimit rule cancelled are read again, so that the caller sees them cancelled.
    const changed = await queueNewPipelines(db, tables, queued, queued[0]!.now);
    const reread =
      changed.length === 0
        ? []
        : await db
            .select()
            .from(p)
            .where(inUuidList(p.id, encodeUuidList(changed)));
    for (const row of reread) if (created.has(row.id)) created.set(row.id, row);
  }
  const takenKeys = pipelines.filter((x) => !created.has(x.id)).map((x) => x.idempotencyKey ?? '');
  const holders =
    takenKeys.length === 0 ? [] : await db.select().from(p).where(inTextList(p.idempotencyKey, takenKeys));
  const byKey = new Map(holders.map((row) => [row.idempotencyKey, row]));
  return pipelines.map((pipeline) => {
    const row = created.get(pipeline.id);
    if (row !== undefined) return { pipeline: row, created: true };
    const holder = byKey.get(pipeline.idempotencyKey);
    if (holder === undefined) throw new DatabaseError(`createPipeline failed: pipeline ${pipeline.id} already exists`);
    return { pipeline: holder, created: false };
  });
}

/** The load gauges: tasks `ready` whose availableAt has come, and pipelines `running`. */
export function countWork(db: PostgresDb, tables: PostgresTables, now: Date) {
  const { pipelineExecutions: p, taskExecutions: t } = tables;
  return db
    .select({
      // Raw SQL: two counts over different tables in one round trip.
      readyTasks: sql<number>`(SELECT count(*)::int FROM ${t} WHERE ${t.status} = 'ready' AND ${t.availableAt} <= ${sql.param(now, t.availableAt)}::timestamptz)`,
      runningPipelines: sql<number>`(SELECT count(*)::int FROM ${p} WHERE ${p.status} = 'running')`,
    })
    .from(sql`(SELECT 1) AS one`);
}
