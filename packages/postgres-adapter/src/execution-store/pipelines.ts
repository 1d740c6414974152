import { DatabaseError, type NewPipeline, newTaskStatus, type PipelineFilter, type PipelineRow } from '@orreryjs/core';
import { and, asc, desc, eq, getTableColumns, sql } from 'drizzle-orm';
import { arrayParam, bind, dateToIso, decodeJsonRow, encodeJson, encodeUuidList, inTextList } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb, PostgresHandle } from '../transaction.js';

/*
 * Pipelines and their tasks: created together (idempotent by key), read by id, by key, by page.
 */

/** The columns of a task row as the port returns it (without the bookkeeping `updated_at`). */
export function taskRowColumns({ taskExecutions: t }: PostgresTables) {
  const { updatedAt: _updatedAt, ...columns } = getTableColumns(t);
  return columns;
}

/** Builds the pipeline statements once; each is named, so each connection parses it once. */
export function preparePipelines({ db, tables, named }: PostgresHandle) {
  const { pipelineExecutions: p, taskExecutions: t } = tables;
  return {
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
    selectTasks: db
      .select(taskRowColumns(tables))
      .from(t)
      .where(eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineId')))
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
        ),
      )
      // Postgres has no insertion order to break ties between executions created in the same millisecond: the id does.
      .orderBy(desc(p.createdAt), desc(p.id))
      .limit(filter.limit)
      .offset(filter.offset)
  );
}

/** Inserts pipelines and their tasks in one statement; returns the pipelines inserted (a taken key inserts nothing). */
export function insertPipelines(db: PostgresDb, tables: PostgresTables, pipelines: readonly NewPipeline[]) {
  const { pipelineExecutions: p, taskExecutions: t } = tables;
  const tasks = pipelines.flatMap((pipeline) => pipeline.tasks.map((task) => ({ pipeline, task })));
  // Raw SQL: rows from parallel arrays (unnest) feeding two inserts chained by a CTE, one statement for the batch.
  return db.execute<{ row: Record<string, unknown> }>(sql`WITH inserted AS (
      INSERT INTO ${p} (id, workflow_name, workflow_version, status, input, idempotency_key, scheduled_time,
        remaining_tasks, failed_tasks, created_at, updated_at)
      SELECT u.id, u.workflow_name, u.workflow_version, 'pending', u.input::jsonb, u.idempotency_key,
        u.scheduled_time, u.remaining_tasks, 0, u.now, u.now
      FROM unnest(${arrayParam(encodeUuidList(pipelines.map((x) => x.id)))}::uuid[],
        ${arrayParam(pipelines.map((x) => x.workflowName))}::text[],
        ${arrayParam(pipelines.map((x) => x.workflowVersion))}::text[],
        ${arrayParam(pipelines.map((x) => encodeJson(x.input)))}::text[],
        ${arrayParam(pipelines.map((x) => x.idempotencyKey))}::text[],
        ${arrayParam(pipelines.map((x) => (x.scheduledTime === null ? null : dateToIso(x.scheduledTime))))}::timestamptz[],
        ${arrayParam(pipelines.map((x) => x.tasks.length))}::int[],
        ${arrayParam(pipelines.map((x) => dateToIso(x.now)))}::timestamptz[])
        AS u(id, workflow_name, workflow_version, input, idempotency_key, scheduled_time, remaining_tasks, now)
      ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
      RETURNING *
    ), tasks AS (
      INSERT INTO ${t} (id, pipeline_execution_id, workflow_name, task_id, position, status, attempt,
        failed_attempts, pending_deps, available_at, updated_at)
      SELECT v.id, i.id, i.workflow_name, v.task_id, v.position, v.status, 0, 0, v.pending_deps, i.created_at, i.created_at
      FROM unnest(${arrayParam(encodeUuidList(tasks.map((x) => x.task.id)))}::uuid[],
        ${arrayParam(encodeUuidList(tasks.map((x) => x.pipeline.id)))}::uuid[],
        ${arrayParam(tasks.map((x) => x.task.taskId))}::text[],
        ${arrayParam(tasks.map((x) => x.task.position))}::int[],
        ${arrayParam(tasks.map((x) => newTaskStatus(x.task.pendingDeps)))}::text[],
        ${arrayParam(tasks.map((x) => x.task.pendingDeps))}::int[])
        AS v(id, pipeline_id, task_id, position, status, pending_deps)
      JOIN inserted i ON i.id = v.pipeline_id
    )
    SELECT to_json(i) AS row FROM inserted i`);
}

/**
 * Creates pipelines with their tasks in one statement (its own transaction, or part of the
 * caller's `db` transaction); a pipeline whose idempotency key is taken, before or earlier in
 * the batch, is not created and the key's holder stands for it (read only when that happens).
 * Results in input order. `createPipeline(s)` and the cron store's in-transaction handoff use it.
 */
export async function createPipelinesIn(
  db: PostgresDb,
  tables: PostgresTables,
  pipelines: readonly NewPipeline[],
): Promise<Array<{ pipeline: PipelineRow; created: boolean }>> {
  if (pipelines.length === 0) return [];
  const p = tables.pipelineExecutions;
  const { rows } = await insertPipelines(db, tables, pipelines);
  const created = new Map(
    rows.map(({ row }) => decodeJsonRow<PipelineRow>(getTableColumns(p), row)).map((row) => [row.id, row]),
  );
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
