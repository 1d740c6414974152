import {
  type FinishTaskRequest,
  type FinishTaskResult,
  type PipelineRow,
  taskOutcomeColumns,
  UNFINISHED_PIPELINE_STATUSES,
} from '@orreryjs/core';
import { and, eq, getTableColumns, type SQL, sql } from 'drizzle-orm';
import type pg from 'pg';
import {
  aliasColumns,
  bind,
  dateToIso,
  decodeRow,
  encodeJson,
  encodeUuidList,
  inTextList,
  pickAliased,
  renderOnce,
  statusIn,
  storableText,
} from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresHandle } from '../transaction.js';
import { withEndedAttempt } from './attempts.js';
import { isRunning } from './lease.js';

/*
 * Finishing a task: the outcome commits fenced on (lease owner, attempt), and a terminal one
 * readies the dependents and counts down the pipeline in the same statement, after locking the
 * pipeline row, so parents finishing together cannot strand a child.
 */

/**
 * finishTask as one statement. It first locks the pipeline row, then commits the outcome fenced
 * on (lease owner, attempt, running); a terminal outcome then decrements the dependents' pending
 * counts (readying those at 0) and the pipeline's remaining count, ending it at 0. Each counter
 * is decremented on the row's latest version, so parents finishing together cannot strand a child.
 */
export function prepareFinish(handle: PostgresHandle) {
  const { db, tables, named } = handle;
  const { pipelineExecutions: p, taskExecutions: t } = tables;
  const pipelineRow = getTableColumns(p);
  const placeholder = sql.placeholder;
  const now = bind(t.updatedAt, 'now');
  const terminal = sql`${placeholder('terminal')}::boolean`;
  const failed = sql`${placeholder('failed')}::int`;
  const unfinished = (column: unknown) => statusIn(sql`${column}`, UNFINISHED_PIPELINE_STATUSES);
  const locked = db.$with('locked').as(
    db
      .select({ id: p.id, status: sql<string>`${p.status}`.as('locked_status') })
      .from(p)
      .where(eq(p.id, bind(p.id, 'pipelineId')))
      .for('no key update'),
  );
  const fenced = db.$with('fenced').as(
    db
      .update(t)
      .set({
        status: bind(t.status, 'status'),
        output: bind(t.output, 'output'),
        error: bind(t.error, 'error'),
        failedAttempts: sql`${t.failedAttempts} + ${failed}`,
        availableAt: sql`coalesce(${bind(t.availableAt, 'availableAt')}, ${t.availableAt})`,
        completedAt: bind(t.completedAt, 'completedAt'),
        // A task claimed ahead whose start no renewal recorded yet: its outcome records it.
        startedAt: sql`coalesce(${t.startedAt}, ${now})`,
        // A failed or timed-out attempt joins the history; a completed one writes nothing more.
        attemptHistory: sql`CASE WHEN ${placeholder('attemptOutcome')}::text IS NULL THEN ${t.attemptHistory} ELSE ${withEndedAttempt(t, now, placeholder('attemptOutcome'), bind(t.error, 'error'))} END`,
        leaseOwner: null,
        leaseExpiresAt: null,
        updatedAt: now,
      })
      .where(
        and(
          // By the task's key (`id` has no index), then the row id as a check.
          eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineId')),
          eq(t.taskId, bind(t.taskId, 'taskId')),
          eq(t.id, bind(t.id, 'id')),
          eq(t.leaseOwner, bind(t.leaseOwner, 'runnerId')),
          eq(t.attempt, sql`${placeholder('attempt')}::int`),
          isRunning(tables),
          // Referencing the lock makes it happen first.
          sql`EXISTS (SELECT 1 FROM ${locked})`,
        ),
      )
      .returning({ taskId: t.taskId }),
  );
  const released = db.$with('released').as(
    db
      .update(t)
      .set({
        pendingDeps: sql`${t.pendingDeps} - 1`,
        status: sql`CASE WHEN ${t.pendingDeps} = 1 AND ${t.status} = 'not_started' THEN 'ready' ELSE ${t.status} END`,
        availableAt: sql`CASE WHEN ${t.pendingDeps} = 1 AND ${t.status} = 'not_started' THEN ${now} ELSE ${t.availableAt} END`,
        updatedAt: now,
      })
      .where(
        and(
          terminal,
          sql`EXISTS (SELECT 1 FROM ${fenced})`,
          eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineId')),
          sql`${t.pendingDeps} > 0`,
          inTextList(t.taskId, placeholder('dependents')),
        ),
      )
      .returning({ status: t.status, pendingDeps: t.pendingDeps }),
  );
  const ends = sql`${p.remainingTasks} <= 1 AND ${unfinished(p.status)}`;
  const counted = db.$with('counted').as(
    db
      .update(p)
      .set({
        remainingTasks: sql`${p.remainingTasks} - 1`,
        failedTasks: sql`${p.failedTasks} + ${failed}`,
        error: sql`coalesce(${p.error}, 'task ' || (SELECT ${fenced.taskId} FROM ${fenced}) || ' failed: ' || ${placeholder('failure')}::text)`,
        status: sql`CASE WHEN ${ends} THEN (CASE WHEN ${p.failedTasks} + ${failed} > 0 THEN 'failed' ELSE 'completed' END) ELSE ${p.status} END`,
        completedAt: sql`CASE WHEN ${ends} THEN ${now} ELSE ${p.completedAt} END`,
        updatedAt: now,
      })
      .from(locked)
      .where(and(terminal, eq(p.id, locked.id), sql`EXISTS (SELECT 1 FROM ${fenced})`))
      .returning({
        ...aliasColumns(pipelineRow, 'c_'),
        ended: sql<boolean>`${unfinished(locked.status)} AND ${p.remainingTasks} <= 0`.as('ended'),
      }),
  );
  return {
    finishTasks: prepareFinishTasks(handle),
    finishTask: db
      .with(locked, fenced, released, counted)
      .select({
        accepted: sql<number>`(SELECT count(*) FROM ${fenced})::int`,
        readied: sql<number>`(SELECT count(*) FROM ${released} WHERE status = 'ready' AND pending_deps = 0)::int`,
        ended: counted.ended,
        pipeline: pickAliased(counted, pipelineRow, 'c_'),
      })
      .from(sql`(SELECT 1) AS one`)
      .leftJoin(counted, sql`true`)
      .prepare(named('orrery_finish_task')),
  };
}

export type FinishStatements = ReturnType<typeof prepareFinish>;

/** Commits an attempt's outcome, fenced; a terminal one readies dependents and may end the pipeline. */
export async function finishTask(q: FinishStatements, request: FinishTaskRequest): Promise<FinishTaskResult> {
  const { outcome, now } = request;
  const { failed, ...columns } = taskOutcomeColumns(outcome, now);
  const [row] = await q.finishTask.execute({
    ...columns,
    failed,
    id: request.taskExecutionId,
    pipelineId: request.pipelineExecutionId,
    taskId: request.taskId,
    runnerId: request.runnerId,
    attempt: request.attempt,
    terminal: outcome.status !== 'retry',
    failure: outcome.status === 'failed' ? storableText(outcome.error) : null,
    dependents: request.dependents,
    now,
  });
  if (row === undefined || row.accepted === 0) return { accepted: false, readied: 0, finishedPipeline: null };
  const finished = row.ended === true ? (row.pipeline as PipelineRow) : null;
  return { accepted: true, readied: row.readied, finishedPipeline: finished };
}

/**
 * The statement of {@link finishTasks}, rendered once and sent under one name, so each
 * connection parses and plans it once. Raw SQL: rows from parallel arrays (unnest) and
 * per-dependent and per-pipeline aggregates, which drizzle's builder cannot express.
 */
function finishTasksSql({ pipelineExecutions: p, taskExecutions: t }: PostgresTables): SQL {
  const unfinished = statusIn(sql.raw('p.status'), UNFINISHED_PIPELINE_STATUSES);
  // A failed or timed-out attempt joins the history; a completed one writes nothing more.
  const attemptOfBatch = withEndedAttempt(
    {
      attemptHistory: sql.raw('t.attempt_history'),
      attempt: sql.raw('t.attempt'),
      leaseOwner: sql.raw('t.lease_owner'),
      startedAt: sql.raw('t.started_at'),
    },
    sql.raw('$1'),
    sql.raw('r.attempt_outcome'),
    sql.raw('r.error'),
  );
  return sql`WITH req AS (
  SELECT * FROM unnest($2::int[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::int[], $8::text[], $9::text[],
    $10::text[], $11::int[], $12::timestamptz[], $13::timestamptz[], $14::boolean[], $15::text[], $18::text[])
    AS r(ord, id, pipeline_id, task_id, runner_id, attempt, status, output, error, failed, available_at, completed_at, terminal,
      failure, attempt_outcome)
), locked AS (
  SELECT p.id, p.status AS locked_status FROM ${p} p
  WHERE p.id IN (SELECT pipeline_id FROM req) ORDER BY p.id FOR NO KEY UPDATE
), fenced AS (
  UPDATE ${t} t SET status = r.status, output = r.output::jsonb, error = r.error,
    failed_attempts = t.failed_attempts + r.failed, available_at = coalesce(r.available_at, t.available_at),
    completed_at = r.completed_at, started_at = coalesce(t.started_at, $1),
    attempt_history = CASE WHEN r.attempt_outcome IS NULL THEN t.attempt_history ELSE ${attemptOfBatch} END,
    lease_owner = NULL, lease_expires_at = NULL,
    updated_at = $1
  FROM req r
  WHERE t.pipeline_execution_id = r.pipeline_id AND t.task_id = r.task_id AND t.id = r.id
    AND t.lease_owner = r.runner_id AND t.attempt = r.attempt AND t.status = 'running'
    AND (SELECT count(*) FROM locked) >= 0
  RETURNING r.ord, t.pipeline_execution_id, t.task_id, r.failed, r.terminal, r.failure
), deps AS (
  SELECT f.pipeline_execution_id AS pipeline_id, d.task_id, count(*)::int AS n, min(f.ord) AS ord
  FROM fenced f JOIN unnest($16::int[], $17::text[]) AS d(ord, task_id) ON d.ord = f.ord
  WHERE f.terminal GROUP BY 1, 2
), released AS (
  UPDATE ${t} t SET pending_deps = t.pending_deps - d.n,
    status = CASE WHEN t.pending_deps = d.n AND t.status = 'not_started' THEN 'ready' ELSE t.status END,
    available_at = CASE WHEN t.pending_deps = d.n AND t.status = 'not_started' THEN $1 ELSE t.available_at END,
    updated_at = $1
  FROM deps d WHERE t.pipeline_execution_id = d.pipeline_id AND t.task_id = d.task_id AND t.pending_deps > 0
  RETURNING d.ord, t.status, t.pending_deps
), counts AS (
  SELECT f.pipeline_execution_id AS pipeline_id, count(*)::int AS n, sum(f.failed)::int AS failed,
    (array_agg('task ' || f.task_id || ' failed: ' || f.failure ORDER BY f.ord) FILTER (WHERE f.failure IS NOT NULL))[1] AS failure,
    max(f.ord) AS last_ord
  FROM fenced f WHERE f.terminal GROUP BY 1
), counted AS (
  UPDATE ${p} p SET remaining_tasks = p.remaining_tasks - c.n, failed_tasks = p.failed_tasks + c.failed,
    error = coalesce(p.error, c.failure),
    status = CASE WHEN p.remaining_tasks <= c.n AND ${unfinished}
      THEN (CASE WHEN p.failed_tasks + c.failed > 0 THEN 'failed' ELSE 'completed' END) ELSE p.status END,
    completed_at = CASE WHEN p.remaining_tasks <= c.n AND ${unfinished} THEN $1 ELSE p.completed_at END,
    updated_at = $1
  FROM counts c JOIN locked l ON l.id = c.pipeline_id
  WHERE p.id = c.pipeline_id
  RETURNING c.last_ord, ${statusIn(sql.raw('l.locked_status'), UNFINISHED_PIPELINE_STATUSES)} AND p.remaining_tasks <= 0 AS ended,
    to_json(p) AS row
)
SELECT r.ord, f.ord IS NOT NULL AS accepted,
  (SELECT count(*) FROM released x WHERE x.ord = r.ord AND x.status = 'ready' AND x.pending_deps = 0)::int AS readied,
  coalesce(c.ended, false) AS ended, c.row
FROM req r LEFT JOIN fenced f ON f.ord = r.ord LEFT JOIN counted c ON c.last_ord = r.ord ORDER BY r.ord`;
}

/** A result row of {@link finishTasks}: one per request, in input order. */
export type FinishTasksRow = {
  ord: number;
  accepted: boolean;
  readied: number;
  ended: boolean;
  row: Record<string, unknown> | null;
};

/**
 * finishTasks as one statement (group commit). It locks every pipeline of the batch first, in
 * id order, so that concurrent batches cannot deadlock; then commits each outcome fenced on
 * its own (lease owner, attempt, running); the accepted terminal outcomes then decrement their
 * dependents' pending counts by the number of their parents in the batch (so two parents
 * finishing together ready their child exactly once) and each pipeline's remaining count,
 * ending it at 0 (returned with the pipeline's last outcome of the batch).
 */
function prepareFinishTasks({ tables, named, pool }: PostgresHandle) {
  const query = renderOnce(finishTasksSql(tables));
  const name = named('orrery_finish_tasks');
  return {
    /** The columns of the ended pipelines' rows, worked out once. */
    pipelineColumns: getTableColumns(tables.pipelineExecutions),
    // The snapshot test reads the text through getQuery().
    getQuery: () => ({ sql: query() }),
    /** On the pool (a transaction of its own), or on `client` inside the caller's transaction. */
    async execute(values: unknown[], client: pg.Pool | pg.PoolClient = pool): Promise<FinishTasksRow[]> {
      return (await client.query<FinishTasksRow>({ name, text: query(), values })).rows;
    },
  };
}

/** Commits many attempts' outcomes in one statement, each fenced on its own; results in input order. */
export async function finishTasks(
  q: FinishStatements,
  requests: readonly FinishTaskRequest[],
  client?: pg.Pool | pg.PoolClient,
): Promise<FinishTaskResult[]> {
  if (requests.length === 0) return [];
  const columns = requests.map((request) => taskOutcomeColumns(request.outcome, request.now));
  const dependents = requests.flatMap((request, ord) => request.dependents.map((taskId) => ({ ord, taskId })));
  // One `now` for the statement: a batch's outcomes are committed at one instant, the latest asked for.
  const now = new Date(Math.max(...requests.map((request) => request.now.getTime())));
  const rows = await q.finishTasks.execute(
    [
      dateToIso(now),
      requests.map((_, ord) => ord),
      encodeUuidList(requests.map((r) => r.taskExecutionId)),
      encodeUuidList(requests.map((r) => r.pipelineExecutionId)),
      requests.map((r) => r.taskId),
      requests.map((r) => r.runnerId),
      requests.map((r) => r.attempt),
      columns.map((c) => c.status),
      columns.map((c) => (c.output === null ? null : encodeJson(c.output))),
      columns.map((c) => (c.error === null ? null : storableText(c.error))),
      columns.map((c) => c.failed),
      columns.map((c) => (c.availableAt === null ? null : dateToIso(c.availableAt))),
      columns.map((c) => (c.completedAt === null ? null : dateToIso(c.completedAt))),
      requests.map((r) => r.outcome.status !== 'retry'),
      requests.map((r) => (r.outcome.status === 'failed' ? storableText(r.outcome.error) : null)),
      dependents.map((d) => d.ord),
      dependents.map((d) => d.taskId),
      columns.map((c) => c.attemptOutcome),
    ],
    client,
  );
  const pipelineRow = q.finishTasks.pipelineColumns;
  return rows.map((row) =>
    row.accepted
      ? {
          accepted: true,
          readied: row.readied,
          finishedPipeline: row.ended && row.row !== null ? decodeRow<PipelineRow>(pipelineRow, row.row) : null,
        }
      : { accepted: false, readied: 0, finishedPipeline: null },
  );
}
