import {
  ACTIVE_PIPELINE_STATUSES,
  type ClaimedTask,
  type ClaimTasksRequest,
  type Json,
  type PipelineRow,
  registeredTaskKeys,
  type TaskRow,
  TERMINAL_TASK_STATUSES,
  truncateToMillis,
} from '@orreryjs/core';
import { and, asc, desc, eq, getTableColumns, isNull, lt, lte, type SQL, sql } from 'drizzle-orm';
import { alias, type PgColumn } from 'drizzle-orm/pg-core';
import type pg from 'pg';
import {
  aliasColumns,
  bind,
  carryAliased,
  DRIVER_TEXT_TYPES,
  decodeRow,
  inTextList,
  lockOf,
  renderBuilt,
  statusIn,
} from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb, PostgresHandle } from '../transaction.js';
import { withEndedAttempt } from './attempts.js';
import { isRunning, later, taskRowColumns } from './conditions.js';

/*
 * Claiming tasks: ready tasks and tasks whose lease expired, leased in one statement with
 * SKIP LOCKED, so that claimers never wait on each other and never share a task. Higher
 * priority first, then oldest.
 */

/**
 * A condition the planner estimates as true for half the rows, whatever the statistics say.
 * Postgres guesses 0.5% for `status = 'ready'` when a table has no statistics yet (a fresh
 * schema, before autovacuum's first ANALYZE) and whatever share was ready at the last ANALYZE
 * otherwise (often none: a queue is empty between bursts). Either way it then expects a handful
 * of claimable rows and plans a bitmap scan of every ready task, a join of each to its
 * pipeline and a sort, instead of the ordered walk of the claim index that stops after `limit`
 * rows: 25 ms instead of 0.1 ms per claim with 5,000 ready tasks (see bench/README.md).
 * `coalesce(<condition>, false)` is the same filter for non-null columns, but an expression
 * without statistics, estimated at one half, so the ordered walk wins with any statistics.
 */
function likely(condition: SQL): SQL {
  return sql`coalesce(${condition}, false)`;
}

/**
 * `ready` tasks of the default priority, or of any other: the predicates of the two claim
 * indexes, written as literals so that a generic plan can use them (see schema.ts).
 */
function isReady({ taskExecutions: t }: PostgresTables, priority: 'default' | 'other') {
  return likely(sql`${t.status} = 'ready' AND ${t.priority} ${sql.raw(priority === 'default' ? '=' : '<>')} 0`);
}

/**
 * Claimable tasks matching `condition` in active pipelines of registered (workflow, task) pairs,
 * oldest first, locked with their pipeline rows. Locking the pipeline too means a pause or a
 * cancel (which lock it first) either waits for the claim, and then sees its running tasks, or
 * makes the claim skip the pipeline's tasks. SKIP LOCKED on both: a claim never waits, so it
 * can never be part of a deadlock; a skipped task is claimed by a later poll.
 */
function selectClaimable(db: PostgresDb, tables: PostgresTables, condition: SQL | undefined, order: SQL[]) {
  const { pipelineExecutions: p, taskExecutions: t } = tables;
  return db
    .select({
      pipelineExecutionId: t.pipelineExecutionId,
      taskId: t.taskId,
      status: t.status,
      availableAt: t.availableAt,
      priority: t.priority,
      startedAt: t.startedAt,
      ...aliasColumns(getTableColumns(p), 'p_'),
    })
    .from(t)
    .innerJoin(p, eq(p.id, t.pipelineExecutionId))
    .where(
      and(
        condition,
        likely(statusIn(p.status, ACTIVE_PIPELINE_STATUSES)),
        // An instance of a map task runs its task's code: the task's registration covers it.
        likely(
          inTextList(
            sql`${t.workflowName} || chr(31) || coalesce(${t.mapOf}, ${t.taskId})`,
            sql.placeholder('registered'),
          ),
        ),
      ),
    )
    .orderBy(...order)
    .limit(sql.placeholder('limit'))
    .for('no key update', { of: lockOf(t, p), skipLocked: true });
}

/** The CTE of the leased rows, which the claim returns whole as JSON. */
const LEASED = 'leased';

/**
 * claimTasks as one statement: lock up to `limit` ready and expired tasks (two ordered walks of
 * their partial indexes), lease the oldest `limit` of them, start their pending pipelines, and
 * return each leased task with its locked pipeline row and its pipeline's terminal tasks.
 */
export function prepareClaim({ db, tables, named, pool }: PostgresHandle) {
  const { pipelineExecutions: p, taskExecutions: t, signals: g } = tables;
  const pipelineRow = getTableColumns(p);
  const taskRow = taskRowColumns(tables);
  const now = bind(t.updatedAt, 'now');
  // Two walks of ready tasks, one per claim index, each in its index's order so that it stops at the limit:
  // the default priority's by age alone (ordering it by priority too would sort every ready task), the
  // others' by priority then age. The candidates are then merged by priority, then age.
  const byAge = [asc(t.availableAt)];
  const byPriority = [desc(t.priority), asc(t.availableAt)];
  const ready = db
    .$with('ready')
    .as(selectClaimable(db, tables, and(isReady(tables, 'default'), lte(t.availableAt, now)), byAge));
  const readyByPriority = db
    .$with('ready_by_priority')
    .as(selectClaimable(db, tables, and(isReady(tables, 'other'), lte(t.availableAt, now)), byPriority));
  const expired = db
    .$with('expired')
    .as(selectClaimable(db, tables, and(isRunning(tables), lt(t.leaseExpiresAt, now)), byPriority));
  const candidates = db
    .$with('candidates')
    .as(
      db
        .select()
        .from(ready)
        .unionAll(db.select().from(readyByPriority))
        .unionAll(db.select().from(expired))
        .orderBy(sql`priority DESC, available_at`)
        .limit(sql.placeholder('limit')),
    );
  // An expired lease costs an attempt only once the attempt's code had started (see startNow).
  const STARTED_ATTEMPT_LOST = sql`${candidates.status} = 'running' AND ${candidates.startedAt} IS NOT NULL`;
  const LOST_ERROR = sql`'lease expired (held by ' || coalesce(${t.leaseOwner}, 'nobody') || ')'`;
  const startNow = sql`${sql.placeholder('startNow')}::int`;
  // A wait task's stored signal, so that its attempt need not read it in a transaction of its own. A
  // scalar subquery, one probe of the signals' key per claimed wait task whatever the planner guesses of
  // the claim's row count; none for other tasks (behind a CASE, their claim costs what it did).
  const storedSignal = db
    .select({ payload: g.payload })
    .from(g)
    .where(and(eq(g.pipelineExecutionId, t.pipelineExecutionId), eq(g.name, t.waitSignal)));
  const leased = db.$with(LEASED).as(
    db
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
        // Raw SQL: a candidate's rank among the others, which drizzle's builder has no expression for.
        startedAt: sql`CASE WHEN ${startNow} >= ${sql.placeholder('limit')}::int THEN ${now}
          WHEN (SELECT count(*) FROM ${candidates} AS earlier WHERE (-earlier.priority, earlier.available_at, earlier.pipeline_execution_id, earlier.task_id)
            < (-${candidates.priority}, ${candidates.availableAt}, ${candidates.pipelineExecutionId}, ${candidates.taskId})) < ${startNow} THEN ${now} END`,
        updatedAt: now,
      })
      .from(candidates)
      // By the task's key: `id` has no index (see schema.ts).
      .where(and(eq(t.pipelineExecutionId, candidates.pipelineExecutionId), eq(t.taskId, candidates.taskId)))
      .returning({
        ...taskRow,
        priority: t.priority,
        leaseExpired: sql<boolean>`${STARTED_ATTEMPT_LOST}`.as('lease_expired'),
        signalPayload: sql`CASE WHEN ${t.waitSignal} IS NOT NULL THEN (${storedSignal}) END`.as('signal_payload'),
        ...carryAliased(candidates, pipelineRow, 'p_'),
      }),
  );
  const started = db.$with('started').as(
    db
      .update(p)
      .set({ status: 'running', startedAt: now, updatedAt: now })
      .where(and(sql`${p.status} = 'pending'`, sql`${p.id} IN (SELECT ${leased.pipelineExecutionId} FROM ${leased})`))
      // Only the id: the rest of the started row is the locked one with the three columns set here (see claimTasks).
      .returning({ startedId: sql<string>`${p.id}`.as('started_id') }),
  );
  // The terminal tasks of each claimed pipeline, aggregated once per pipeline however many of its tasks were claimed;
  // none for a pipeline of which only instances of map tasks were claimed: the runner reads their task's input once
  // per mapping (see core's map.ts), where this would read every instance row of the pipeline on each claim.
  const tt = alias(t, 'tt');
  const terminal = db.$with('terminal').as(
    db
      .select({
        pipelineId: sql<string>`${tt.pipelineExecutionId}`.as('terminal_pipeline_id'),
        // Raw SQL: json_agg of whole rows, which drizzle's builder has no function for.
        tasks: sql<Array<Record<string, unknown>>>`json_agg(tt ORDER BY ${tt.position})`.as('terminal_tasks'),
      })
      .from(tt)
      .where(
        and(
          sql`${tt.pipelineExecutionId} IN (SELECT ${leased.pipelineExecutionId} FROM ${leased} WHERE ${leased.mapOf} IS NULL)`,
          statusIn(tt.status, TERMINAL_TASK_STATUSES),
          // Instances of map tasks are not the pipeline's tasks: their task's output carries their results.
          isNull(tt.mapOf),
        ),
      )
      .groupBy(tt.pipelineExecutionId),
  );
  const rendered = renderBuilt(
    db
      .with(ready, readyByPriority, expired, candidates, leased, started, terminal)
      .select({
        // The leased row as one JSON column rather than its ~45 columns: pg describes and sets up
        // each column of a result on every execution, ~160 µs of Node time per claim for 48 of
        // them against 3, one job at a time (bench/README.md). Decoded as the other JSON rows are.
        row: sql<LeasedRow>`to_json(${sql.identifier(LEASED)})`.as('row'),
        startedId: started.startedId,
        terminal: terminal.tasks,
      })
      .from(leased)
      .leftJoin(started, eq(started.startedId, leased.pipelineExecutionId))
      .leftJoin(terminal, eq(terminal.pipelineId, leased.pipelineExecutionId))
      .orderBy(desc(leased.priority), asc(leased.availableAt)),
  );
  const name = named('orrery_claim_tasks');
  return {
    claimTasks: {
      /** The columns its rows decode with, worked out once: the task's, and the pipeline's under `p_`. */
      rowColumns: { task: taskRow, pipeline: pipelineRow, signalPayload: g.payload },
      // The snapshot test reads the text through getQuery().
      getQuery: () => ({ sql: rendered.text() }),
      /** On the pool (a transaction of its own), or on `client` inside the caller's transaction. */
      async execute(
        placeholders: Record<string, unknown>,
        client: pg.Pool | pg.PoolClient = pool,
      ): Promise<Array<Record<string, unknown>>> {
        const query = { name, text: rendered.text(), values: rendered.values(placeholders), types: DRIVER_TEXT_TYPES };
        return (await client.query<Record<string, unknown>>(query)).rows;
      },
    },
  };
}

export type ClaimStatements = ReturnType<typeof prepareClaim>;

/** The leased row as `to_json` writes it: the task's columns, its pipeline's as `p_<column>`, and what the claim adds. */
type LeasedRow = Record<string, unknown> & { lease_expired: boolean; signal_payload: unknown };

/** A row of the claim: the leased row, and what the other CTEs add. */
type ClaimRow = Record<string, unknown> & {
  row: LeasedRow;
  started_id: string | null;
  terminal_tasks: Array<Record<string, unknown>> | null;
};

/** A stored signal's payload column (its value wrapped in an object) as {@link ClaimedTask.signal}. */
function decodeSignal(column: PgColumn, value: unknown): { payload: Json | null } {
  return { payload: (column.mapFromDriverValue(value) as { value: Json | null }).value };
}

/** Leases up to `limit` claimable tasks to the claimer, with their pipelines and terminal tasks. */
export async function claimTasks(
  q: ClaimStatements,
  request: ClaimTasksRequest,
  client?: pg.Pool | pg.PoolClient,
): Promise<ClaimedTask[]> {
  const rows = (await q.claimTasks.execute(
    {
      now: request.now,
      registered: registeredTaskKeys(request.registered),
      limit: request.limit,
      startNow: request.startNow ?? request.limit,
      runnerId: request.runnerId,
      leaseExpiresAt: later(request.now, request.leaseMs),
    },
    client,
  )) as ClaimRow[];
  // A pipeline this claim started reads as the statement wrote it: running, started and updated now.
  const startedAt = truncateToMillis(request.now);
  const { task: taskRow, pipeline: pipelineRow, signalPayload } = q.claimTasks.rowColumns;
  // Decoded once per pipeline: tasks of one pipeline claimed together share the (read-only) list.
  const terminalOf = new Map<string, TaskRow[]>();
  const terminalTasks = (pipelineId: string, rows: Array<Record<string, unknown>> | null) => {
    let decoded = terminalOf.get(pipelineId);
    if (decoded === undefined) {
      decoded = (rows ?? []).map((task) => decodeRow<TaskRow>(taskRow, task));
      terminalOf.set(pipelineId, decoded);
    }
    return decoded;
  };
  return rows.map(({ row: leased, started_id, terminal_tasks }) => {
    const task = decodeRow<TaskRow>(taskRow, leased);
    const pipeline = decodeRow<PipelineRow>(pipelineRow, leased, 'p_');
    return {
      task,
      pipeline:
        started_id === null ? pipeline : { ...pipeline, status: 'running' as const, startedAt, updatedAt: startedAt },
      terminalTasks: terminalTasks(task.pipelineExecutionId, terminal_tasks),
      leaseExpired: leased.lease_expired,
      ...(leased.signal_payload === null ? {} : { signal: decodeSignal(signalPayload, leased.signal_payload) }),
    };
  });
}
