import {
  type ClaimedTask,
  type ClaimTasksRequest,
  DatabaseError,
  type ExecutionStore,
  type FinishTaskRequest,
  type FinishTaskResult,
  type LeaseRef,
  type NewPipeline,
  type PipelineFilter,
  type PipelineRow,
  type TaskOutcome,
  type TaskRow,
} from '@orreryjs/core';
import { and, asc, desc, eq, getTableColumns, inArray, lt, lte, type SQL, sql } from 'drizzle-orm';
import {
  aliasColumns,
  arrayParam,
  bind,
  carryAliased,
  dateToIso,
  decodeJsonRow,
  encodeJson,
  encodeUuidList,
  fieldsOf,
  inTextList,
  inUuidList,
  pickAliased,
  storableText,
} from './codec.js';
import { pipelineExecutions as p, taskExecutions as t } from './schema.js';
import { type PostgresDb, type PostgresHandle, statement, transaction } from './transaction.js';

const placeholder = sql.placeholder;
const { updatedAt: _taskUpdatedAt, ...taskRow } = getTableColumns(t);
const pipelineRow = getTableColumns(p);

// Status filters are literals, not bound parameters, so that a generic plan can use the partial indexes.
const ACTIVE_PIPELINE = sql`${p.status} IN ('pending', 'running')`;
const UNFINISHED_PIPELINE = sql`${p.status} IN ('pending', 'running', 'paused')`;
const TERMINAL_PIPELINE = sql`${p.status} IN ('completed', 'failed', 'cancelled')`;
/**
 * A pipeline no `claimed` ledger row waits for: a cron pipeline's idempotency key is its
 * occurrence's id, and recovery of a claimed row looks its pipeline up by that key, so deleting
 * it would start the occurrence a second time. Raw SQL: a key cast guarded so that a key that
 * is not a UUID cannot fail it.
 */
const NOT_AWAITED_BY_RECOVERY = sql`(${p.scheduledTime} IS NULL OR NOT EXISTS (SELECT 1 FROM cron_executions ce
  WHERE ce.status = 'claimed' AND ce.id = (CASE WHEN ${p.idempotencyKey}
    ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN ${p.idempotencyKey}::uuid END)))`;
const TERMINAL_TASK = sql`${t.status} IN ('completed', 'failed', 'skipped', 'cancelled')`;
const IS_READY = sql`${t.status} = 'ready'`;
const IS_RUNNING = sql`${t.status} = 'running'`;

/** Column values an outcome writes to its task row. */
function outcomeColumns(outcome: TaskOutcome, now: Date) {
  switch (outcome.status) {
    case 'completed':
      return {
        status: 'completed',
        output: outcome.output,
        error: null,
        failed: 0,
        availableAt: null,
        completedAt: now,
      };
    case 'failed':
      return { status: 'failed', output: null, error: outcome.error, failed: 1, availableAt: null, completedAt: now };
    case 'skipped':
      return { status: 'skipped', output: null, error: outcome.reason, failed: 0, availableAt: null, completedAt: now };
    case 'retry':
      return {
        status: 'ready',
        output: null,
        error: outcome.error,
        failed: 1,
        availableAt: outcome.availableAt,
        completedAt: null,
      };
  }
}

/** `now + ms` as a Date, from `now` truncated to the millisecond. */
function later(now: Date, ms: number): Date {
  return new Date(Date.parse(dateToIso(now)) + ms);
}

/**
 * Claimable tasks matching `condition` in active pipelines of registered (workflow, task) pairs,
 * oldest first, locked with their pipeline rows. Locking the pipeline too means a pause or a
 * cancel (which lock it first) either waits for the claim, and then sees its running tasks, or
 * makes the claim skip the pipeline's tasks. SKIP LOCKED on both: a claim never waits, so it
 * can never be part of a deadlock; a skipped task is claimed by a later poll.
 */
function selectClaimable(db: PostgresDb, condition: SQL | undefined) {
  return db
    .select({ id: t.id, status: t.status, availableAt: t.availableAt, ...aliasColumns(pipelineRow, 'p_') })
    .from(t)
    .innerJoin(p, eq(p.id, t.pipelineExecutionId))
    .where(
      and(
        condition,
        ACTIVE_PIPELINE,
        inTextList(sql`${t.workflowName} || chr(31) || ${t.taskId}`, placeholder('registered')),
      ),
    )
    .orderBy(asc(t.availableAt))
    .limit(placeholder('limit'))
    .for('no key update', { of: [t, p], skipLocked: true });
}

/**
 * claimTasks as one statement: lock up to `limit` ready and expired tasks (two ordered walks of
 * their partial indexes), lease the oldest `limit` of them, start their pending pipelines, and
 * return each leased task with its locked pipeline row and its pipeline's terminal tasks.
 */
function prepareClaim(db: PostgresDb) {
  const now = bind(t.updatedAt, 'now');
  const ready = db.$with('ready').as(selectClaimable(db, and(IS_READY, lte(t.availableAt, now))));
  const expired = db.$with('expired').as(selectClaimable(db, and(IS_RUNNING, lt(t.leaseExpiresAt, now))));
  const candidates = db
    .$with('candidates')
    .as(
      db
        .select()
        .from(ready)
        .unionAll(db.select().from(expired))
        .orderBy(sql`available_at`)
        .limit(placeholder('limit')),
    );
  const leased = db.$with('leased').as(
    db
      .update(t)
      .set({
        status: 'running',
        attempt: sql`${t.attempt} + 1`,
        failedAttempts: sql`${t.failedAttempts} + (CASE WHEN ${IS_RUNNING} THEN 1 ELSE 0 END)`,
        error: sql`CASE WHEN ${IS_RUNNING} THEN 'lease expired (held by ' || coalesce(${t.leaseOwner}, 'nobody') || ')' ELSE ${t.error} END`,
        leaseOwner: bind(t.leaseOwner, 'runnerId'),
        leaseExpiresAt: bind(t.leaseExpiresAt, 'leaseExpiresAt'),
        startedAt: now,
        updatedAt: now,
      })
      .from(candidates)
      .where(eq(t.id, candidates.id))
      .returning({
        ...taskRow,
        leaseExpired: sql<boolean>`${candidates.status} = 'running'`.as('lease_expired'),
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
  return db
    .with(ready, expired, candidates, leased, started)
    .select({
      task: fieldsOf(leased, taskRow),
      leaseExpired: leased.leaseExpired,
      pipeline: pickAliased(leased, pipelineRow, 'p_'),
      startedId: started.startedId,
      // Raw SQL: a correlated json_agg of whole rows, which drizzle's builder cannot nest in a select list.
      terminal: sql<Array<Record<string, unknown>>>`(SELECT coalesce(json_agg(tt ORDER BY tt.position), '[]'::json)
        FROM task_executions tt WHERE tt.pipeline_execution_id = ${leased.pipelineExecutionId}
        AND tt.status IN ('completed', 'failed', 'skipped', 'cancelled'))`,
    })
    .from(leased)
    .leftJoin(started, eq(started.startedId, leased.pipelineExecutionId))
    .orderBy(asc(leased.availableAt))
    .prepare('orrery_claim_tasks');
}

/**
 * finishTask as one statement. It first locks the pipeline row, then commits the outcome fenced
 * on (lease owner, attempt, running); a terminal outcome then decrements the dependents' pending
 * counts (readying those at 0) and the pipeline's remaining count, ending it at 0. Each counter
 * is decremented on the row's latest version, so parents finishing together cannot strand a child.
 */
function prepareFinish(db: PostgresDb) {
  const now = bind(t.updatedAt, 'now');
  const terminal = sql`${placeholder('terminal')}::boolean`;
  const failed = sql`${placeholder('failed')}::int`;
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
        leaseOwner: null,
        leaseExpiresAt: null,
        updatedAt: now,
      })
      .where(
        and(
          eq(t.id, bind(t.id, 'id')),
          eq(t.leaseOwner, bind(t.leaseOwner, 'runnerId')),
          eq(t.attempt, sql`${placeholder('attempt')}::int`),
          IS_RUNNING,
          // Referencing the lock makes it happen first.
          sql`${t.pipelineExecutionId} IN (SELECT ${locked.id} FROM ${locked})`,
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
  const ends = sql`${p.remainingTasks} <= 1 AND ${p.status} IN ('pending', 'running', 'paused')`;
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
        ended: sql<boolean>`${locked.status} IN ('pending', 'running', 'paused') AND ${p.remainingTasks} <= 0`.as(
          'ended',
        ),
      }),
  );
  return db
    .with(locked, fenced, released, counted)
    .select({
      accepted: sql<number>`(SELECT count(*) FROM ${fenced})::int`,
      readied: sql<number>`(SELECT count(*) FROM ${released} WHERE status = 'ready' AND pending_deps = 0)::int`,
      ended: counted.ended,
      pipeline: pickAliased(counted, pipelineRow, 'c_'),
    })
    .from(sql`(SELECT 1) AS one`)
    .leftJoin(counted, sql`true`)
    .prepare('orrery_finish_task');
}

/** Builds every statement once; `.prepare()` names it, so each connection parses it once. */
function prepareStatements(handle: PostgresHandle) {
  const { db } = handle;
  const now = bind(t.updatedAt, 'now');
  // The id list lets Postgres reach rows through the primary key; the (id, attempt) pairs are the fence.
  const leaseFence = and(
    eq(t.leaseOwner, bind(t.leaseOwner, 'runnerId')),
    IS_RUNNING,
    inUuidList(t.id, placeholder('ids')),
    sql`(${t.id}, ${t.attempt}) IN (SELECT * FROM unnest(${placeholder('ids')}::uuid[], ${placeholder('attempts')}::int[]))`,
  );
  return {
    selectPipeline: db
      .select()
      .from(p)
      .where(eq(p.id, bind(p.id, 'id')))
      .prepare('orrery_select_pipeline'),
    selectPipelineByKey: db
      .select()
      .from(p)
      .where(eq(p.idempotencyKey, bind(p.idempotencyKey, 'key')))
      .prepare('orrery_select_pipeline_by_key'),
    selectTasks: db
      .select(taskRow)
      .from(t)
      .where(eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineId')))
      .orderBy(asc(t.position))
      .prepare('orrery_select_tasks'),
    claim: prepareClaim(db),
    renewLeases: db
      .update(t)
      .set({ leaseExpiresAt: bind(t.leaseExpiresAt, 'leaseExpiresAt'), updatedAt: now })
      .where(leaseFence)
      .returning({ id: t.id })
      .prepare('orrery_renew_leases'),
    releaseLeases: db
      .update(t)
      .set({ status: 'ready', leaseOwner: null, leaseExpiresAt: null, availableAt: now, updatedAt: now })
      .where(leaseFence)
      .prepare('orrery_release_leases'),
    finishTask: prepareFinish(db),
    resumePipeline: db
      .update(p)
      .set({
        status: sql`CASE WHEN ${p.startedAt} IS NULL THEN 'pending' ELSE 'running' END`,
        pauseReason: null,
        updatedAt: bind(p.updatedAt, 'now'),
      })
      .where(and(eq(p.id, bind(p.id, 'id')), sql`${p.status} = 'paused'`))
      .returning()
      .prepare('orrery_resume_pipeline'),
    countStalledTasks: db
      .select({ count: sql<number>`count(*)::int` })
      .from(t)
      .where(and(IS_RUNNING, lt(t.leaseExpiresAt, bind(t.leaseExpiresAt, 'now'))))
      .prepare('orrery_count_stalled_tasks'),
    deleteTerminalPipelines: db
      .delete(p)
      .where(
        inArray(
          p.id,
          db
            .select({ id: p.id })
            .from(p)
            .where(and(TERMINAL_PIPELINE, lt(p.completedAt, bind(p.completedAt, 'before')), NOT_AWAITED_BY_RECOVERY))
            .limit(placeholder('batchSize'))
            // Concurrent sweeps split the work instead of waiting on each other's rows.
            .for('update', { skipLocked: true }),
        ),
      )
      .prepare('orrery_delete_terminal_pipelines'),
  };
}

/** {@link ExecutionStore} on Postgres: each method is one transaction, most of them one statement. */
export class PostgresExecutionStore implements ExecutionStore {
  readonly #handle: PostgresHandle;
  readonly #q: ReturnType<typeof prepareStatements>;

  /** Builds every statement for `handle`; the schema must be migrated. */
  constructor(handle: PostgresHandle) {
    this.#handle = handle;
    this.#q = prepareStatements(handle);
  }

  async createPipeline(pipeline: NewPipeline): Promise<{ pipeline: PipelineRow; created: boolean }> {
    const [result] = await statement('createPipeline', () => createPipelinesIn(this.#handle.db, [pipeline]));
    return result!;
  }

  createPipelines(pipelines: readonly NewPipeline[]): Promise<Array<{ pipeline: PipelineRow; created: boolean }>> {
    // One statement, so no BEGIN/COMMIT: Postgres runs it as its own transaction.
    return statement('createPipelines', () => createPipelinesIn(this.#handle.db, pipelines));
  }

  getPipeline(id: string): Promise<PipelineRow | null> {
    return statement('getPipeline', async () => (await this.#q.selectPipeline.execute({ id }))[0] ?? null);
  }

  getPipelineByIdempotencyKey(key: string): Promise<PipelineRow | null> {
    return statement('getPipelineByIdempotencyKey', async () => (await this.#byKey(key)) ?? null);
  }

  listPipelines(filter: PipelineFilter): Promise<PipelineRow[]> {
    return statement('listPipelines', () =>
      this.#handle.db
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
        .offset(filter.offset),
    );
  }

  listTasks(pipelineExecutionId: string): Promise<TaskRow[]> {
    return statement('listTasks', () => this.#q.selectTasks.execute({ pipelineId: pipelineExecutionId }));
  }

  claimTasks(request: ClaimTasksRequest): Promise<ClaimedTask[]> {
    const registered = request.registered.flatMap((r) => r.taskIds.map((id) => `${r.workflowName}\u001f${id}`));
    if (registered.length === 0 || request.limit <= 0) return Promise.resolve([]);
    return statement('claimTasks', async () => {
      const rows = await this.#q.claim.execute({
        now: request.now,
        registered,
        limit: request.limit,
        runnerId: request.runnerId,
        leaseExpiresAt: later(request.now, request.leaseMs),
      });
      // A pipeline this claim started reads as the statement wrote it: running, started and updated now.
      const startedAt = new Date(dateToIso(request.now));
      return rows.map((row) => ({
        task: row.task,
        pipeline:
          row.startedId === null
            ? row.pipeline
            : { ...row.pipeline, status: 'running', startedAt, updatedAt: startedAt },
        terminalTasks: row.terminal.map((task) => decodeJsonRow<TaskRow>(taskRow, task)),
        leaseExpired: row.leaseExpired,
      }));
    });
  }

  renewLeases(runnerId: string, leases: readonly LeaseRef[], leaseMs: number, now: Date): Promise<string[]> {
    if (leases.length === 0) return Promise.resolve([]);
    return statement('renewLeases', async () => {
      const rows = await this.#q.renewLeases.execute({
        runnerId,
        ids: encodeUuidList(leases.map((l) => l.taskExecutionId)),
        attempts: leases.map((l) => l.attempt),
        leaseExpiresAt: later(now, leaseMs),
        now,
      });
      return rows.map((row) => row.id);
    });
  }

  releaseLeases(runnerId: string, leases: readonly LeaseRef[], now: Date): Promise<number> {
    if (leases.length === 0) return Promise.resolve(0);
    return statement('releaseLeases', async () => {
      const result = await this.#q.releaseLeases.execute({
        runnerId,
        ids: encodeUuidList(leases.map((l) => l.taskExecutionId)),
        attempts: leases.map((l) => l.attempt),
        now,
      });
      return result.rowCount ?? 0;
    });
  }

  finishTask(request: FinishTaskRequest): Promise<FinishTaskResult> {
    const { outcome, now } = request;
    const { failed, ...columns } = outcomeColumns(outcome, now);
    return statement('finishTask', async () => {
      const [row] = await this.#q.finishTask.execute({
        ...columns,
        failed,
        id: request.taskExecutionId,
        pipelineId: request.pipelineExecutionId,
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
    });
  }

  cancelPipeline(id: string, now: Date): Promise<PipelineRow | null> {
    // Two statements: the task update must run after the pipeline lock is held, on a snapshot that sees every claim
    // committed before it (a single statement's snapshot could predate them and leave a claimed task running).
    return transaction(this.#handle, 'cancelPipeline', async (tx) => {
      const [cancelled] = await tx
        .update(p)
        .set({ status: 'cancelled', remainingTasks: 0, completedAt: now, updatedAt: now })
        .where(and(eq(p.id, id), UNFINISHED_PIPELINE))
        .returning();
      if (cancelled === undefined) return selectPipelineIn(tx, id);
      await tx
        .update(t)
        .set({ status: 'cancelled', leaseOwner: null, leaseExpiresAt: null, completedAt: now, updatedAt: now })
        .where(and(eq(t.pipelineExecutionId, id), sql`NOT ${TERMINAL_TASK}`));
      return cancelled;
    });
  }

  pausePipeline(id: string, reason: string | null, now: Date): Promise<PipelineRow | null> {
    // Two statements, for the reason given in cancelPipeline.
    return transaction(this.#handle, 'pausePipeline', async (tx) => {
      const [paused] = await tx
        .update(p)
        .set({ status: 'paused', pauseReason: reason, updatedAt: now })
        .where(and(eq(p.id, id), ACTIVE_PIPELINE))
        .returning();
      if (paused === undefined) return selectPipelineIn(tx, id);
      await tx
        .update(t)
        .set({ status: 'ready', leaseOwner: null, leaseExpiresAt: null, availableAt: now, updatedAt: now })
        .where(and(eq(t.pipelineExecutionId, id), IS_RUNNING));
      return paused;
    });
  }

  resumePipeline(id: string, now: Date): Promise<PipelineRow | null> {
    return statement('resumePipeline', async () => {
      const [resumed] = await this.#q.resumePipeline.execute({ id, now });
      return resumed ?? (await this.#q.selectPipeline.execute({ id }))[0] ?? null;
    });
  }

  countStalledTasks(now: Date): Promise<number> {
    return statement(
      'countStalledTasks',
      async () => (await this.#q.countStalledTasks.execute({ now }))[0]?.count ?? 0,
    );
  }

  deleteTerminalPipelines(before: Date, batchSize: number): Promise<number> {
    return statement(
      'deleteTerminalPipelines',
      async () => (await this.#q.deleteTerminalPipelines.execute({ before, batchSize })).rowCount ?? 0,
    );
  }

  async #byKey(key: string): Promise<PipelineRow | undefined> {
    return (await this.#q.selectPipelineByKey.execute({ key }))[0];
  }
}

/**
 * Creates pipelines with their tasks in one statement (its own transaction, or part of the
 * caller's `db` transaction); a pipeline whose idempotency key is taken, before or earlier in
 * the batch, is not created and the key's holder stands for it (read only when that happens).
 * Results in input order. `createPipeline(s)` and the cron store's in-transaction handoff use it.
 */
export async function createPipelinesIn(
  db: PostgresDb,
  pipelines: readonly NewPipeline[],
): Promise<Array<{ pipeline: PipelineRow; created: boolean }>> {
  if (pipelines.length === 0) return [];
  const tasks = pipelines.flatMap((pipeline) => pipeline.tasks.map((task) => ({ pipeline, task })));
  // Raw SQL: rows from parallel arrays (unnest) feeding two inserts chained by a CTE, one statement for the batch.
  const { rows } = await db.execute<{ row: Record<string, unknown> }>(sql`WITH inserted AS (
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
      SELECT v.id, i.id, i.workflow_name, v.task_id, v.position,
        CASE WHEN v.pending_deps = 0 THEN 'ready' ELSE 'not_started' END, 0, 0, v.pending_deps, i.created_at, i.created_at
      FROM unnest(${arrayParam(encodeUuidList(tasks.map((x) => x.task.id)))}::uuid[],
        ${arrayParam(encodeUuidList(tasks.map((x) => x.pipeline.id)))}::uuid[],
        ${arrayParam(tasks.map((x) => x.task.taskId))}::text[],
        ${arrayParam(tasks.map((x) => x.task.position))}::int[],
        ${arrayParam(tasks.map((x) => x.task.pendingDeps))}::int[])
        AS v(id, pipeline_id, task_id, position, pending_deps)
      JOIN inserted i ON i.id = v.pipeline_id
    )
    SELECT to_json(i) AS row FROM inserted i`);
  const created = new Map(
    rows.map(({ row }) => decodeJsonRow<PipelineRow>(pipelineRow, row)).map((row) => [row.id, row]),
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

async function selectPipelineIn(tx: PostgresDb, id: string): Promise<PipelineRow | null> {
  const [row] = await tx.select().from(p).where(eq(p.id, id));
  return row ?? null;
}
