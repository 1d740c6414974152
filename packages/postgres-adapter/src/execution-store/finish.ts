import {
  type FinishTaskRequest,
  type FinishTaskResult,
  type PipelineRow,
  taskOutcomeColumns,
  UNFINISHED_PIPELINE_STATUSES,
} from '@orreryjs/core';
import { getTableColumns, type SQL, sql } from 'drizzle-orm';
import type pg from 'pg';
import { dateToIso, decodeRow, encodeJson, encodeUuidList, renderOnce, statusIn, storableText } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresHandle } from '../transaction.js';
import { withEndedAttempt } from './attempts.js';

/*
 * Finishing tasks: a batch of outcomes commits in one statement, each fenced on (lease owner,
 * attempt), and the terminal ones ready their dependents and count down their pipelines in the
 * same statement, after locking the pipeline rows, so parents finishing together cannot strand
 * a child.
 */

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
    available_at = CASE WHEN t.pending_deps = d.n AND t.status = 'not_started'
      THEN $1 + t.delay_ms * interval '1 millisecond' ELSE t.available_at END,
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
export function prepareFinish({ tables, named, pool }: PostgresHandle) {
  const query = renderOnce(finishTasksSql(tables));
  const name = named('orrery_finish_tasks');
  return {
    finishTasks: {
      /** The columns of the ended pipelines' rows, worked out once. */
      pipelineColumns: getTableColumns(tables.pipelineExecutions),
      // The snapshot test reads the text through getQuery().
      getQuery: () => ({ sql: query() }),
      /** On the pool (a transaction of its own), or on `client` inside the caller's transaction. */
      async execute(values: unknown[], client: pg.Pool | pg.PoolClient = pool): Promise<FinishTasksRow[]> {
        return (await client.query<FinishTasksRow>({ name, text: query(), values })).rows;
      },
    },
  };
}

export type FinishStatements = ReturnType<typeof prepareFinish>;

/**
 * Commits a batch of attempts' outcomes in one statement, each fenced on its own; results in
 * input order. On the pool, or on `client` inside the caller's transaction.
 */
export async function finishTasks(
  q: FinishStatements,
  requests: readonly FinishTaskRequest[],
  client?: pg.Pool | pg.PoolClient,
): Promise<FinishTaskResult[]> {
  if (requests.length === 0) return [];
  const columns = requests.map((request) => taskOutcomeColumns(request.outcome, request.now));
  // An instance of a map task readies nothing and counts nothing itself: it settles its task (see maps.ts).
  const dependents = requests.flatMap((request, ord) =>
    request.mapInstance === undefined ? request.dependents.map((taskId) => ({ ord, taskId })) : [],
  );
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
      requests.map((r) => r.outcome.status !== 'retry' && r.mapInstance === undefined),
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
