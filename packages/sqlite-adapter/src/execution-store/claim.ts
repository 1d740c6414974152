import {
  ACTIVE_PIPELINE_STATUSES,
  type ClaimedTask,
  type ClaimTasksRequest,
  type Json,
  registeredTaskKeys,
  type TaskRow,
  TERMINAL_TASK_STATUSES,
} from '@orreryjs/core';
import { and, asc, desc, eq, isNull, lt, lte, type SQL, sql } from 'drizzle-orm';
import { bind, encodeTextList, encodeUuidList, statusIn, textListSql, uuidListSql } from '../codec.js';
import type { SqliteTables } from '../schema.js';
import type { SqliteDb, SqliteHandle } from '../transaction.js';
import { withEndedAttempt } from './attempts.js';
import { isRunning, later, taskRowColumns } from './conditions.js';

/*
 * Claiming tasks: ready tasks and tasks whose lease expired, leased inside one BEGIN IMMEDIATE
 * transaction, so that claimers take turns and never share a task. Higher priority first, then
 * oldest.
 */

/**
 * `ready` tasks of the default priority, or of any other: the predicates of the two claim
 * indexes, as literals so that SQLite matches each to its index (see schema.ts).
 */
function isReady({ taskExecutions: t }: SqliteTables, priority: 'default' | 'other') {
  return sql`${t.status} = 'ready' AND ${t.priority} ${sql.raw(priority === 'default' ? '=' : '<>')} 0`;
}

/** Claimable tasks matching `condition` in active pipelines of registered (workflow, task) pairs. */
function selectClaimable(db: SqliteDb, tables: SqliteTables, condition: SQL | undefined, order: SQL[]) {
  const { pipelineExecutions: p, taskExecutions: t } = tables;
  return db
    .select({ id: t.id, status: t.status, availableAt: t.availableAt, priority: t.priority, startedAt: t.startedAt })
    .from(t)
    .innerJoin(p, eq(p.id, t.pipelineExecutionId))
    .where(
      and(
        condition,
        // Unary + keeps SQLite from driving the query from the pipeline status index, which would visit every active pipeline.
        statusIn(sql`+${p.status}`, ACTIVE_PIPELINE_STATUSES),
        // An instance of a map task runs its task's code: the task's registration covers it.
        sql`${t.workflowName} || char(31) || coalesce(${t.mapOf}, ${t.taskId}) IN ${textListSql(sql.placeholder('registered'))}`,
      ),
    )
    .orderBy(...order)
    .limit(sql.placeholder('limit'))
    .prepare();
}

/** Prepares the claim statements once on the connection. */
export function prepareClaim({ db, tables }: SqliteHandle) {
  const { pipelineExecutions: p, taskExecutions: t, signals: g } = tables;
  const now = bind(t.updatedAt, 'now');
  const byIds = (column: unknown) => sql`${column} IN ${uuidListSql(sql.placeholder('ids'))}`;
  const IS_RUNNING = isRunning(tables);
  // An expired lease costs an attempt only once the attempt's code had started (see startNow).
  const STARTED_ATTEMPT_LOST = sql`${IS_RUNNING} AND ${t.startedAt} IS NOT NULL`;
  const LOST_ERROR = sql`'lease expired (held by ' || coalesce(${t.leaseOwner}, 'nobody') || ')'`;
  // Two statements, each an ordered walk of its own partial index that stops at the limit, so a claim
  // costs the same with a backlog of thousands of ready tasks as with none.
  // Each walk in its index's order, so that it stops at the limit: the default priority's by age alone
  // (ordering it by priority too would sort every ready task), the others' by priority then age.
  const byAge = [asc(t.availableAt)];
  const byPriority = [desc(t.priority), asc(t.availableAt)];
  const selectReady = selectClaimable(db, tables, and(isReady(tables, 'default'), lte(t.availableAt, now)), byAge);
  const selectReadyByPriority = selectClaimable(
    db,
    tables,
    and(isReady(tables, 'other'), lte(t.availableAt, now)),
    byPriority,
  );
  const selectExpired = selectClaimable(db, tables, and(IS_RUNNING, lt(t.leaseExpiresAt, now)), byPriority);
  // A wait task's stored signal, so that its attempt need not read it in a transaction of its own (none
  // for other tasks, behind a CASE).
  const storedSignal = db
    .select({ payload: g.payload })
    .from(g)
    .where(and(eq(g.pipelineExecutionId, t.pipelineExecutionId), eq(g.name, t.waitSignal)));
  const leaseTasks = db
    .update(t)
    .set({
      status: 'running',
      attempt: sql`${t.attempt} + 1`,
      failedAttempts: sql`${t.failedAttempts} + (CASE WHEN ${STARTED_ATTEMPT_LOST} THEN 1 ELSE 0 END)`,
      error: sql`CASE WHEN ${STARTED_ATTEMPT_LOST} THEN ${LOST_ERROR} ELSE ${t.error} END`,
      // The lost attempt joins the history under the runner that lost it, ended when its lease expired.
      attemptHistory: sql`CASE WHEN ${STARTED_ATTEMPT_LOST} THEN ${withEndedAttempt(t, t.leaseExpiresAt, sql`'lease_expired'`, LOST_ERROR)} ELSE ${t.attemptHistory} END`,
      leaseOwner: bind(t.leaseOwner, 'runnerId'),
      runnerId: bind(t.runnerId, 'runnerId'),
      leaseExpiresAt: bind(t.leaseExpiresAt, 'leaseExpiresAt'),
      // The oldest `startNow` candidates start at once; the rest are claimed ahead, not started.
      startedAt: sql`CASE WHEN ${t.id} IN ${uuidListSql(sql.placeholder('startIds'))} THEN ${now} END`,
      updatedAt: now,
    })
    .where(byIds(t.id))
    .returning({
      ...taskRowColumns(tables),
      priority: t.priority,
      signalPayload: sql<{
        value: Json | null;
      } | null>`CASE WHEN ${t.waitSignal} IS NOT NULL THEN (${storedSignal}) END`.mapWith(g.payload),
    })
    .prepare();
  const startPipelines = db
    .update(p)
    .set({ status: 'running', startedAt: now, updatedAt: now })
    .where(and(sql`${p.status} = 'pending'`, byIds(p.id)))
    .prepare();
  const selectPipelinesById = db.select().from(p).where(byIds(p.id)).prepare();
  const selectTerminalTasks = db
    .select(taskRowColumns(tables))
    .from(t)
    // Instances of map tasks are not the pipeline's tasks: their task's output carries their results.
    .where(and(byIds(t.pipelineExecutionId), statusIn(t.status, TERMINAL_TASK_STATUSES), isNull(t.mapOf)))
    .orderBy(asc(t.position))
    .prepare();
  return {
    // Differs by necessity: no UPDATE in a CTE and no SKIP LOCKED, so the claim is seven statements in order.
    claimTasks: [
      selectReady,
      selectReadyByPriority,
      selectExpired,
      leaseTasks,
      startPipelines,
      selectPipelinesById,
      selectTerminalTasks,
    ] as const,
  };
}

export type ClaimStatements = ReturnType<typeof prepareClaim>;

/** Higher priority first, then oldest: the claim's order. */
function inClaimOrder(a: { priority: number; availableAt: Date }, b: { priority: number; availableAt: Date }): number {
  return b.priority - a.priority || a.availableAt.getTime() - b.availableAt.getTime();
}

/** Leases up to `limit` claimable tasks to the claimer, with their pipelines and terminal tasks. */
export function claimTasks(q: ClaimStatements, request: ClaimTasksRequest): ClaimedTask[] {
  const [
    selectReady,
    selectReadyByPriority,
    selectExpired,
    leaseTasks,
    startPipelines,
    selectPipelinesById,
    selectTerminalTasks,
  ] = q.claimTasks;
  const params = {
    now: request.now,
    registered: encodeTextList(registeredTaskKeys(request.registered)),
    limit: request.limit,
  };
  const candidates = [...selectExpired.all(params), ...selectReadyByPriority.all(params), ...selectReady.all(params)]
    .sort(inClaimOrder)
    .slice(0, request.limit);
  if (candidates.length === 0) return [];
  // Differs by necessity: SQLite ranks the candidates here, where Postgres ranks them in the statement.
  const expired = new Set(candidates.filter((c) => c.status === 'running' && c.startedAt !== null).map((c) => c.id));
  const tasks = leaseTasks.all({
    ids: encodeUuidList(candidates.map((c) => c.id)),
    startIds: encodeUuidList(candidates.slice(0, request.startNow ?? request.limit).map((c) => c.id)),
    runnerId: request.runnerId,
    leaseExpiresAt: later(request.now, request.leaseMs),
    now: request.now,
  });
  const pipelineIds = encodeUuidList([...new Set(tasks.map((task) => task.pipelineExecutionId))]);
  startPipelines.run({ ids: pipelineIds, now: request.now });
  const pipelines = new Map(selectPipelinesById.all({ ids: pipelineIds }).map((row) => [row.id, row]));
  const terminal = new Map<string, TaskRow[]>();
  // None for a pipeline of which only instances of map tasks were claimed: the runner reads their task's input
  // once per mapping (see core's map.ts), where this would read every instance row of the pipeline on each claim.
  const withTasks = encodeUuidList([
    ...new Set(tasks.filter((t) => t.mapOf == null).map((t) => t.pipelineExecutionId)),
  ]);
  for (const row of selectTerminalTasks.all({ ids: withTasks })) {
    const list = terminal.get(row.pipelineExecutionId);
    if (list === undefined) terminal.set(row.pipelineExecutionId, [row]);
    else list.push(row);
  }
  return tasks.sort(inClaimOrder).map(({ priority: _priority, signalPayload, ...task }) => ({
    task,
    pipeline: pipelines.get(task.pipelineExecutionId)!,
    terminalTasks: terminal.get(task.pipelineExecutionId) ?? [],
    leaseExpired: expired.has(task.id),
    ...(signalPayload === null ? {} : { signal: { payload: signalPayload.value } }),
  }));
}
