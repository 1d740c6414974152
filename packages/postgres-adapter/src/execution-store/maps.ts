import {
  type FinishTaskRequest,
  type FinishTaskResult,
  instanceResult,
  MAP_LEASE_OWNER,
  type MapItem,
  type MapTally,
  mapInstanceTaskId,
  mapSettlement,
  mapTallies,
  mapTaskRequest,
  newId,
  type Page,
  type StartMapRequest,
  TERMINAL_TASK_STATUSES,
  withSettledMaps,
} from '@orreryjs/core';
import { and, asc, eq, inArray, isNotNull, sql } from 'drizzle-orm';
import { arrayParam, encodeJson, encodeUuidList, statusNotIn } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb } from '../transaction.js';
import { heldBy, taskRowColumns } from './conditions.js';
import { type FinishStatements, finishTasks } from './finish.js';

/*
 * Map tasks (see core's map.ts): a claimed map task parks under the map lease and inserts one
 * instance row per item; instances' outcomes count it down, and the last to complete (or the
 * first to fail for good) settles it through the ordinary finish.
 */

/**
 * Parks the claimed map task under the map lease, fenced on its lease; returns what its
 * instances copy (no row when the lease was lost).
 */
export function parkMapTask(db: PostgresDb, tables: PostgresTables, request: StartMapRequest) {
  const t = tables.taskExecutions;
  return db
    .update(t)
    .set({
      leaseOwner: MAP_LEASE_OWNER,
      leaseExpiresAt: null,
      // The task waits on its instances as on dependencies (see core's map.ts).
      pendingDeps: request.items.length,
      startedAt: sql`coalesce(${t.startedAt}, ${sql.param(request.now, t.startedAt)})`,
      updatedAt: request.now,
    })
    .where(heldBy(tables, request))
    .returning({ workflowName: t.workflowName, position: t.position, priority: t.priority });
}

/** What a parked map task's instances copy from it. */
type ParkedMapTask = { workflowName: string; position: number; priority: number };

/**
 * Inserts a map task's instances, `ready` now, one per item, in one statement. Raw SQL: rows
 * from parallel arrays (unnest), which drizzle's builder cannot insert from.
 */
export function insertInstances(
  db: PostgresDb,
  tables: PostgresTables,
  request: StartMapRequest,
  parked: ParkedMapTask,
) {
  const t = tables.taskExecutions;
  const ids = encodeUuidList(request.items.map(() => newId()));
  const taskIds = request.items.map((_, index) => mapInstanceTaskId(request.taskId, index));
  const items = request.items.map((item) => encodeJson({ value: item, attempt: request.attempt } satisfies MapItem));
  const now = sql`${sql.param(request.now, t.updatedAt)}::timestamptz`;
  return db.execute(sql`INSERT INTO ${t} (id, pipeline_execution_id, workflow_name, task_id, position, status, attempt,
  failed_attempts, pending_deps, available_at, priority, map_of, map_index, map_item, updated_at)
SELECT i.id, ${request.pipelineExecutionId}, ${parked.workflowName}, i.task_id, ${parked.position}, 'ready', 0,
  0, 0, ${now}, ${parked.priority}, ${request.taskId}, i.ord - 1, i.item, ${now}
FROM unnest(${arrayParam(ids)}::uuid[], ${arrayParam(taskIds)}::text[], ${arrayParam(items)}::jsonb[])
  WITH ORDINALITY AS i(id, task_id, item, ord)`);
}

/**
 * Counts a map task down by the instances of a batch that completed, while it is still parked
 * under the map lease; returns what settling it needs (nothing when it was settled already).
 */
export function countDownMapTask(db: PostgresDb, tables: PostgresTables, tally: MapTally) {
  const t = tables.taskExecutions;
  return db
    .update(t)
    .set({ pendingDeps: sql`${t.pendingDeps} - ${tally.completed}`, updatedAt: tally.now })
    .where(
      and(
        eq(t.pipelineExecutionId, tally.pipelineExecutionId),
        eq(t.taskId, tally.taskId),
        sql`${t.status} = 'running'`,
        eq(t.leaseOwner, MAP_LEASE_OWNER),
      ),
    )
    .returning({ id: t.id, attempt: t.attempt, pendingDeps: t.pendingDeps });
}

/** The instances of a map task, in item order. */
export function selectMapInstances(db: PostgresDb, tables: PostgresTables, pipelineId: string, taskId: string) {
  const t = tables.taskExecutions;
  return db
    .select(taskRowColumns(tables))
    .from(t)
    .where(and(eq(t.pipelineExecutionId, pipelineId), eq(t.mapOf, taskId)))
    .orderBy(asc(t.mapIndex));
}

/** A page of a map task's instances, in item order. */
export function selectMapInstancePage(
  db: PostgresDb,
  tables: PostgresTables,
  pipelineId: string,
  taskId: string,
  page: Page,
) {
  return selectMapInstances(db, tables, pipelineId, taskId).limit(page.limit).offset(page.offset);
}

/** The instances of a map task that failed for good cancel the others: the unfinished ones are cancelled. */
export function cancelMapInstances(db: PostgresDb, tables: PostgresTables, tally: MapTally) {
  const t = tables.taskExecutions;
  return db
    .update(t)
    .set({ status: 'cancelled', leaseOwner: null, leaseExpiresAt: null, completedAt: tally.now, updatedAt: tally.now })
    .where(
      and(
        eq(t.pipelineExecutionId, tally.pipelineExecutionId),
        eq(t.mapOf, tally.taskId),
        statusNotIn(t.status, TERMINAL_TASK_STATUSES),
      ),
    );
}

/** Each map task's instances of a pipeline by status, in task order. */
export function countMapInstancesOf(db: PostgresDb, tables: PostgresTables, pipelineId: string) {
  const t = tables.taskExecutions;
  return db
    .select({
      taskId: sql<string>`${t.mapOf}`,
      total: sql<number>`count(*)::int`,
      completed: sql<number>`(count(*) FILTER (WHERE ${t.status} = 'completed'))::int`,
      failed: sql<number>`(count(*) FILTER (WHERE ${t.status} = 'failed'))::int`,
      running: sql<number>`(count(*) FILTER (WHERE ${t.status} = 'running'))::int`,
    })
    .from(t)
    .where(and(eq(t.pipelineExecutionId, pipelineId), isNotNull(t.mapOf)))
    .groupBy(t.mapOf)
    .orderBy(sql`min(${t.position})`);
}

/** Deletes the instances of the given tasks (by row id) of a pipeline: a retried map task maps anew. */
export function deleteMapInstances(db: PostgresDb, tables: PostgresTables, pipelineId: string, taskRowIds: string[]) {
  const t = tables.taskExecutions;
  const retried = db
    .select({ taskId: t.taskId })
    .from(t)
    .where(and(eq(t.pipelineExecutionId, pipelineId), inArray(t.id, taskRowIds)));
  return db.delete(t).where(and(eq(t.pipelineExecutionId, pipelineId), inArray(t.mapOf, retried)));
}

/** Starts a claimed map task's instances inside `tx` (see ExecutionStore.startMap); false when the lease was lost. */
export async function startMapIn(tx: PostgresDb, tables: PostgresTables, request: StartMapRequest): Promise<boolean> {
  const [parked] = await parkMapTask(tx, tables, request);
  if (parked === undefined) return false;
  await insertInstances(tx, tables, request, parked);
  return true;
}

/**
 * Settles the map tasks whose instances the accepted outcomes of a batch ended, inside the
 * batch's transaction (see core's map.ts): a failed instance fails its task and cancels the
 * others; the last completed one completes it with the results in item order. The task's own
 * outcome is an ordinary finish under the map lease; its result joins the instance outcome's.
 */
export async function settleMapsIn(
  tx: PostgresDb,
  tables: PostgresTables,
  finish: FinishStatements,
  requests: readonly FinishTaskRequest[],
  finished: FinishTaskResult[],
): Promise<FinishTaskResult[]> {
  const settling: Array<{ ord: number; request: FinishTaskRequest }> = [];
  for (const tally of mapTallies(requests, finished)) {
    const [parked] = await countDownMapTask(tx, tables, tally);
    const settlement = parked === undefined ? null : mapSettlement(tally, parked);
    if (settlement === null) continue;
    if (settlement === 'failed') await cancelMapInstances(tx, tables, tally);
    const results =
      settlement === 'completed'
        ? (await selectMapInstances(tx, tables, tally.pipelineExecutionId, tally.taskId)).map(instanceResult)
        : null;
    settling.push({ ord: tally.lastOrd, request: mapTaskRequest(tally, parked!, results) });
  }
  if (settling.length === 0) return finished;
  const settled = await finishTasks(
    finish,
    settling.map((s) => s.request),
    tx.$client,
  );
  return withSettledMaps(finished, settling, settled);
}
