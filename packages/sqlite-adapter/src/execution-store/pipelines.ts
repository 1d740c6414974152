import {
  DatabaseError,
  DEFAULT_PRIORITY,
  isQueued,
  type NewPipeline,
  newTaskStatus,
  type PipelineFilter,
  type PipelineRow,
} from '@orreryjs/core';
import { and, asc, desc, eq, gte, isNull, lte, sql } from 'drizzle-orm';
import { bind } from '../codec.js';
import type { SqliteTables } from '../schema.js';
import type { SqliteDb, SqliteHandle } from '../transaction.js';

import { taskRowColumns } from './conditions.js';
/*
 * Pipelines and their tasks: created together (idempotent by key), read by id, by key, by page.
 */

/** Prepares the pipeline statements once on the connection. */
export function preparePipelines({ db, tables }: SqliteHandle) {
  const { pipelineExecutions: p, taskExecutions: t } = tables;
  const now = bind(t.updatedAt, 'now');
  const insertPipeline = db
    .insert(p)
    .values({
      id: bind(p.id, 'id'),
      workflowName: bind(p.workflowName, 'workflowName'),
      workflowVersion: bind(p.workflowVersion, 'workflowVersion'),
      status: 'pending',
      input: bind(p.input, 'input'),
      idempotencyKey: bind(p.idempotencyKey, 'idempotencyKey'),
      scheduledTime: bind(p.scheduledTime, 'scheduledTime'),
      scheduleId: bind(p.scheduleId, 'scheduleId'),
      traceContext: bind(p.traceContext, 'traceContext'),
      runAt: bind(p.runAt, 'runAt'),
      priority: bind(p.priority, 'priority'),
      concurrency: bind(p.concurrency, 'concurrency'),
      remainingTasks: bind(p.remainingTasks, 'remainingTasks'),
      failedTasks: 0,
      createdAt: bind(p.createdAt, 'now'),
      updatedAt: bind(p.updatedAt, 'now'),
    })
    .onConflictDoNothing()
    .returning()
    .prepare();
  const insertTask = db
    .insert(t)
    .values({
      id: bind(t.id, 'id'),
      pipelineExecutionId: bind(t.pipelineExecutionId, 'pipelineId'),
      workflowName: bind(t.workflowName, 'workflowName'),
      taskId: bind(t.taskId, 'taskId'),
      position: bind(t.position, 'position'),
      status: bind(t.status, 'status'),
      attempt: 0,
      failedAttempts: 0,
      pendingDeps: bind(t.pendingDeps, 'pendingDeps'),
      // A delayed start (runAt) keeps every task unclaimable until then.
      availableAt: bind(t.availableAt, 'availableAt'),
      delayMs: bind(t.delayMs, 'delayMs'),
      waitSignal: bind(t.waitSignal, 'waitSignal'),
      priority: bind(t.priority, 'priority'),
      updatedAt: now,
    })
    .prepare();
  return {
    // Differs by necessity: no INSERT in a CTE, so the pipeline row, then one statement per task.
    insertPipelines: [insertPipeline, insertTask] as const,
    selectPipeline: db
      .select()
      .from(p)
      .where(eq(p.id, bind(p.id, 'id')))
      .prepare(),
    selectPipelineByKey: db
      .select()
      .from(p)
      .where(eq(p.idempotencyKey, bind(p.idempotencyKey, 'key')))
      .prepare(),
    // A range on the primary key: the ids from the prefix padded with 0s to it padded with fs.
    selectPipelineIdsByPrefix: db
      .select({ id: p.id })
      .from(p)
      .where(and(gte(p.id, bind(p.id, 'first')), lte(p.id, bind(p.id, 'last'))))
      .orderBy(asc(p.id))
      .limit(sql.placeholder('limit'))
      .prepare(),
    selectTasks: db
      .select(taskRowColumns(tables))
      .from(t)
      // Instances of map tasks are listed apart (see maps.ts).
      .where(and(eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineId')), isNull(t.mapOf)))
      .orderBy(asc(t.position))
      .prepare(),
  };
}

export type PipelineStatements = ReturnType<typeof preparePipelines>;

/** One page of pipelines, newest first. */
export function selectPipelines(db: SqliteDb, tables: SqliteTables, filter: PipelineFilter) {
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
      // rowid breaks ties between executions created in the same millisecond: later insert, newer.
      .orderBy(desc(p.createdAt), sql`${p}.rowid DESC`)
      .limit(filter.limit)
      .offset(filter.offset)
  );
}

/**
 * Creates a pipeline with its tasks inside the caller's write transaction, or, when its
 * idempotency key is taken, returns the pipeline holding it. A pipeline of concurrency groups
 * is inserted queued (its first tasks `not_started`): the caller then queues it with
 * `queueCreated` (admission.ts). `createPipeline(s)` and the cron
 * store's in-transaction handoff use it.
 */
export function createPipelineIn(
  q: PipelineStatements,
  pipeline: NewPipeline,
): { pipeline: PipelineRow; created: boolean } {
  const [insertPipeline, insertTask] = q.insertPipelines;
  const [row] = insertPipeline.all({
    id: pipeline.id,
    workflowName: pipeline.workflowName,
    workflowVersion: pipeline.workflowVersion,
    input: pipeline.input,
    idempotencyKey: pipeline.idempotencyKey,
    scheduledTime: pipeline.scheduledTime,
    scheduleId: pipeline.scheduleId ?? null,
    traceContext: pipeline.traceContext ?? null,
    runAt: pipeline.runAt ?? null,
    priority: pipeline.priority ?? DEFAULT_PRIORITY,
    concurrency: isQueued(pipeline) ? pipeline.concurrency : null,
    remainingTasks: pipeline.tasks.length,
    now: pipeline.now,
  });
  if (row === undefined) {
    // Only the idempotency key can collide (ids are fresh UUIDs): return the execution that holds it.
    const existing =
      pipeline.idempotencyKey === null ? undefined : q.selectPipelineByKey.get({ key: pipeline.idempotencyKey });
    if (existing === undefined)
      throw new DatabaseError(`createPipeline failed: pipeline ${pipeline.id} already exists`);
    return { pipeline: existing, created: false };
  }
  for (const task of pipeline.tasks) {
    insertTask.run({
      id: task.id,
      pipelineId: pipeline.id,
      workflowName: pipeline.workflowName,
      taskId: task.taskId,
      position: task.position,
      status: newTaskStatus(task.pendingDeps, isQueued(pipeline)),
      pendingDeps: task.pendingDeps,
      availableAt: new Date((pipeline.runAt ?? pipeline.now).getTime() + (task.delayMs ?? 0)),
      delayMs: task.delayMs ?? 0,
      waitSignal: task.waitSignal ?? null,
      priority: pipeline.priority ?? DEFAULT_PRIORITY,
      now: pipeline.now,
    });
  }
  return { pipeline: row, created: true };
}

/** The load gauges: tasks `ready` whose availableAt has come, and pipelines `running`. */
export function countWork(db: SqliteDb, tables: SqliteTables, now: Date) {
  const { pipelineExecutions: p, taskExecutions: t } = tables;
  return db
    .select({
      // Raw SQL: two counts over different tables in one round trip.
      readyTasks: sql<number>`(SELECT count(*) FROM ${t} WHERE ${t.status} = 'ready' AND ${t.availableAt} <= ${sql.param(now, t.availableAt)})`,
      runningPipelines: sql<number>`(SELECT count(*) FROM ${p} WHERE ${p.status} = 'running')`,
    })
    .from(sql`(SELECT 1) AS one`);
}
