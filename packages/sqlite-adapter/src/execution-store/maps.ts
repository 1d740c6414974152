import {
  type FinishTaskRequest,
  type FinishTaskResult,
  instanceResult,
  MAP_LEASE_OWNER,
  type MapInstanceCounts,
  type MapItem,
  mapInstanceTaskId,
  mapSettlement,
  mapTallies,
  mapTaskRequest,
  newId,
  type StartMapRequest,
  TERMINAL_TASK_STATUSES,
  withSettledMaps,
} from '@orreryjs/core';
import { and, asc, eq, isNotNull, sql } from 'drizzle-orm';
import { bind, statusNotIn } from '../codec.js';
import type { SqliteHandle } from '../transaction.js';
import { heldBy, taskRowColumns } from './conditions.js';
import { type FinishStatements, finishTasks } from './finish.js';

/*
 * Map tasks (see core's map.ts): a claimed map task parks under the map lease and inserts one
 * instance row per item; instances' outcomes count it down, and the last to complete (or the
 * first to fail for good) settles it through the ordinary finish.
 */

/** Prepares the map statements once on the connection. */
export function prepareMaps({ db, tables }: SqliteHandle) {
  const t = tables.taskExecutions;
  const now = bind(t.updatedAt, 'now');
  const ofMap = and(
    eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineExecutionId')),
    eq(t.mapOf, bind(t.mapOf, 'taskId')),
  );
  return {
    // Parks the claimed map task under the map lease, fenced on its lease; returns what its instances copy.
    parkMapTask: db
      .update(t)
      .set({
        leaseOwner: MAP_LEASE_OWNER,
        leaseExpiresAt: null,
        // The task waits on its instances as on dependencies (see core's map.ts).
        pendingDeps: sql`${sql.placeholder('items')}`,
        startedAt: sql`coalesce(${t.startedAt}, ${now})`,
        updatedAt: now,
      })
      .where(heldBy(tables))
      .returning({ workflowName: t.workflowName, position: t.position, priority: t.priority })
      .prepare(),
    // Differs by necessity: no unnest, so one row per run, all in the caller's transaction.
    // An instance, `ready` now.
    insertInstances: db
      .insert(t)
      .values({
        id: bind(t.id, 'id'),
        pipelineExecutionId: bind(t.pipelineExecutionId, 'pipelineExecutionId'),
        workflowName: bind(t.workflowName, 'workflowName'),
        taskId: bind(t.taskId, 'instanceTaskId'),
        position: bind(t.position, 'position'),
        status: 'ready',
        attempt: 0,
        failedAttempts: 0,
        pendingDeps: 0,
        availableAt: now,
        priority: bind(t.priority, 'priority'),
        mapOf: bind(t.mapOf, 'taskId'),
        mapIndex: bind(t.mapIndex, 'index'),
        mapItem: bind(t.mapItem, 'item'),
        updatedAt: now,
      })
      .prepare(),
    // Counts a parked map task down by the instances of a batch that completed; no row once it was settled.
    countDownMapTask: db
      .update(t)
      .set({ pendingDeps: sql`${t.pendingDeps} - ${sql.placeholder('completed')}`, updatedAt: now })
      .where(
        and(
          eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineExecutionId')),
          eq(t.taskId, bind(t.taskId, 'taskId')),
          sql`${t.status} = 'running'`,
          eq(t.leaseOwner, MAP_LEASE_OWNER),
        ),
      )
      .returning({ id: t.id, attempt: t.attempt, pendingDeps: t.pendingDeps })
      .prepare(),
    // The instances of a map task, in item order.
    selectMapInstances: db.select(taskRowColumns(tables)).from(t).where(ofMap).orderBy(asc(t.mapIndex)).prepare(),
    // A page of them.
    selectMapInstancePage: db
      .select(taskRowColumns(tables))
      .from(t)
      .where(ofMap)
      .orderBy(asc(t.mapIndex))
      .limit(sql.placeholder('limit'))
      .offset(sql.placeholder('offset'))
      .prepare(),
    // An instance that failed for good cancels the others: the unfinished ones are cancelled.
    cancelMapInstances: db
      .update(t)
      .set({ status: 'cancelled', leaseOwner: null, leaseExpiresAt: null, completedAt: now, updatedAt: now })
      .where(and(ofMap, statusNotIn(t.status, TERMINAL_TASK_STATUSES)))
      .prepare(),
    // Each map task's instances of a pipeline by status, in task order.
    countMapInstancesOf: db
      .select({
        taskId: sql<string>`${t.mapOf}`,
        total: sql<number>`count(*)`,
        completed: sql<number>`count(*) FILTER (WHERE ${t.status} = 'completed')`,
        failed: sql<number>`count(*) FILTER (WHERE ${t.status} = 'failed')`,
        running: sql<number>`count(*) FILTER (WHERE ${t.status} = 'running')`,
      })
      .from(t)
      .where(and(eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineExecutionId')), isNotNull(t.mapOf)))
      .groupBy(t.mapOf)
      .orderBy(sql`min(${t.position})`)
      .prepare(),
    // Deletes the instances of a task (by row id) of a pipeline: a retried map task maps anew.
    deleteMapInstances: db
      .delete(t)
      .where(
        and(
          eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'id')),
          sql`${t.mapOf} IN (SELECT ${t.taskId} FROM ${t} WHERE ${t.pipelineExecutionId} = ${bind(t.pipelineExecutionId, 'id')} AND ${t.id} = ${bind(t.id, 'taskRowId')})`,
        ),
      )
      .prepare(),
  };
}

export type MapStatements = ReturnType<typeof prepareMaps>;

/** Starts a claimed map task's instances inside the caller's write transaction (see ExecutionStore.startMap). */
export function startMapIn(q: MapStatements, request: StartMapRequest): boolean {
  const parked = q.parkMapTask.get({ ...request, items: request.items.length });
  if (parked === undefined) return false;
  request.items.forEach((item, index) => {
    q.insertInstances.run({
      ...parked,
      id: newId(),
      pipelineExecutionId: request.pipelineExecutionId,
      instanceTaskId: mapInstanceTaskId(request.taskId, index),
      taskId: request.taskId,
      index,
      item: { value: item, attempt: request.attempt } satisfies MapItem,
      now: request.now,
    });
  });
  return true;
}

/** Each map task's instances of a pipeline by status, in task order. */
export function countMapInstancesIn(q: MapStatements, pipelineExecutionId: string): MapInstanceCounts[] {
  return q.countMapInstancesOf.all({ pipelineExecutionId });
}

/**
 * Settles the map tasks whose instances the accepted outcomes of a batch ended, inside the
 * batch's transaction (see core's map.ts): a failed instance fails its task and cancels the
 * others; the last completed one completes it with the results in item order. The task's own
 * outcome is an ordinary finish under the map lease; its result joins the instance outcome's.
 */
export function settleMapsIn(
  q: MapStatements,
  finish: FinishStatements,
  requests: readonly FinishTaskRequest[],
  finished: FinishTaskResult[],
): FinishTaskResult[] {
  const settling: Array<{ ord: number; request: FinishTaskRequest }> = [];
  for (const tally of mapTallies(requests, finished)) {
    const keys = { pipelineExecutionId: tally.pipelineExecutionId, taskId: tally.taskId, now: tally.now };
    const parked = q.countDownMapTask.get({ ...keys, completed: tally.completed });
    const settlement = parked === undefined ? null : mapSettlement(tally, parked);
    if (settlement === null) continue;
    if (settlement === 'failed') q.cancelMapInstances.run(keys);
    const results = settlement === 'completed' ? q.selectMapInstances.all(keys).map(instanceResult) : null;
    settling.push({ ord: tally.lastOrd, request: mapTaskRequest(tally, parked!, results) });
  }
  if (settling.length === 0) return finished;
  const settled = finishTasks(
    finish,
    settling.map((s) => s.request),
  );
  return withSettledMaps(finished, settling, settled);
}
