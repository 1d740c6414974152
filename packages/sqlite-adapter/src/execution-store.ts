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
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core';
import { bind, dateToMillis, encodeTextList, encodeUuidList, textListSql, uuidListSql, uuidToBytes } from './codec.js';
import { pipelineExecutions as p, taskExecutions as t } from './schema.js';
import { readTransaction, type SqliteDb, type SqliteHandle, writeTransaction } from './transaction.js';

const placeholder = sql.placeholder;
const { updatedAt: _taskUpdatedAt, ...taskRow } = getTableColumns(t);

// Status filters are literals, not bound parameters, so that SQLite matches them to the partial indexes.
const ACTIVE_PIPELINE = sql`${p.status} IN ('pending', 'running')`;
const UNFINISHED_PIPELINE = sql`${p.status} IN ('pending', 'running', 'paused')`;
const TERMINAL_PIPELINE = sql`${p.status} IN ('completed', 'failed', 'cancelled')`;
/**
 * A pipeline no `claimed` ledger row waits for: a cron pipeline's idempotency key is its
 * occurrence's id, and recovery of a claimed row looks its pipeline up by that key, so deleting
 * it would start the occurrence a second time. Raw SQL: the key read as the row's BLOB id.
 */
const NOT_AWAITED_BY_RECOVERY = sql`(${p.scheduledTime} IS NULL OR NOT EXISTS (SELECT 1 FROM cron_executions ce
  WHERE ce.id = unhex(replace(${p.idempotencyKey}, '-', '')) AND ce.status = 'claimed'))`;
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

/** `(id, attempt)` fences of a lease list as one JSON parameter matched by {@link leaseFence}. */
function encodeLeases(leases: readonly LeaseRef[]): string {
  return encodeTextList(leases.map((l) => `${uuidToBytes(l.taskExecutionId).toString('hex')}:${l.attempt}`));
}

/** Claimable tasks matching `condition` in active pipelines of registered (workflow, task) pairs. */
function selectClaimable(db: SqliteDb, condition: SQL | undefined) {
  return db
    .select({ id: t.id, status: t.status, availableAt: t.availableAt })
    .from(t)
    .innerJoin(p, eq(p.id, t.pipelineExecutionId))
    .where(
      and(
        condition,
        // Unary + keeps SQLite from driving the query from the pipeline status index, which would visit every active pipeline.
        sql`+${p.status} IN ('pending', 'running')`,
        sql`${t.workflowName} || char(31) || ${t.taskId} IN ${textListSql(placeholder('registered'))}`,
      ),
    )
    .orderBy(asc(t.availableAt))
    .limit(placeholder('limit'))
    .prepare();
}

/** Builds every statement once; `.prepare()` compiles it on the connection. */
function prepareStatements(handle: SqliteHandle) {
  const { db } = handle;
  const now = bind(t.updatedAt, 'now');
  const byIds = (column: SQLiteColumn) => sql`${column} IN ${uuidListSql(placeholder('ids'))}`;
  // The id list lets SQLite reach rows through the primary key; the (id, attempt) list is the fence.
  const leaseFence = and(
    eq(t.leaseOwner, bind(t.leaseOwner, 'runnerId')),
    IS_RUNNING,
    byIds(t.id),
    sql`lower(hex(${t.id})) || ':' || ${t.attempt} IN ${textListSql(placeholder('leases'))}`,
  );
  return {
    insertPipeline: db
      .insert(p)
      .values({
        id: bind(p.id, 'id'),
        workflowName: bind(p.workflowName, 'workflowName'),
        workflowVersion: bind(p.workflowVersion, 'workflowVersion'),
        status: 'pending',
        input: bind(p.input, 'input'),
        idempotencyKey: bind(p.idempotencyKey, 'idempotencyKey'),
        scheduledTime: bind(p.scheduledTime, 'scheduledTime'),
        remainingTasks: bind(p.remainingTasks, 'remainingTasks'),
        failedTasks: 0,
        createdAt: bind(p.createdAt, 'now'),
        updatedAt: bind(p.updatedAt, 'now'),
      })
      .onConflictDoNothing()
      .returning()
      .prepare(),
    insertTask: db
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
        availableAt: now,
        updatedAt: now,
      })
      .prepare(),
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
    selectTasks: db
      .select(taskRow)
      .from(t)
      .where(eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineId')))
      .orderBy(asc(t.position))
      .prepare(),
    // Two statements, each an ordered walk of its own partial index that stops at the limit, so a claim
    // costs the same with a backlog of thousands of ready tasks as with none.
    selectReady: selectClaimable(db, and(IS_READY, lte(t.availableAt, now))),
    selectExpired: selectClaimable(db, and(IS_RUNNING, lt(t.leaseExpiresAt, now))),
    leaseTasks: db
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
      .where(byIds(t.id))
      .returning(taskRow)
      .prepare(),
    startPipelines: db
      .update(p)
      .set({ status: 'running', startedAt: now, updatedAt: now })
      .where(and(sql`${p.status} = 'pending'`, byIds(p.id)))
      .prepare(),
    selectPipelines: db.select().from(p).where(byIds(p.id)).prepare(),
    selectTerminalTasks: db
      .select(taskRow)
      .from(t)
      .where(and(byIds(t.pipelineExecutionId), TERMINAL_TASK))
      .orderBy(asc(t.position))
      .prepare(),
    renewLeases: db
      .update(t)
      .set({ leaseExpiresAt: bind(t.leaseExpiresAt, 'leaseExpiresAt'), updatedAt: now })
      .where(leaseFence)
      .returning({ id: t.id })
      .prepare(),
    releaseLeases: db
      .update(t)
      .set({ status: 'ready', leaseOwner: null, leaseExpiresAt: null, availableAt: now, updatedAt: now })
      .where(leaseFence)
      .prepare(),
    finishTask: db
      .update(t)
      .set({
        status: bind(t.status, 'status'),
        output: bind(t.output, 'output'),
        error: bind(t.error, 'error'),
        failedAttempts: sql`${t.failedAttempts} + ${placeholder('failed')}`,
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
          eq(t.attempt, placeholder('attempt')),
          IS_RUNNING,
        ),
      )
      .returning({ taskId: t.taskId })
      .prepare(),
    releaseDependents: db
      .update(t)
      .set({
        pendingDeps: sql`${t.pendingDeps} - 1`,
        status: sql`CASE WHEN ${t.pendingDeps} = 1 AND ${t.status} = 'not_started' THEN 'ready' ELSE ${t.status} END`,
        availableAt: sql`CASE WHEN ${t.pendingDeps} = 1 AND ${t.status} = 'not_started' THEN ${now} ELSE ${t.availableAt} END`,
        updatedAt: now,
      })
      .where(
        and(
          eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineId')),
          sql`${t.pendingDeps} > 0`,
          sql`${t.taskId} IN ${textListSql(placeholder('dependents'))}`,
        ),
      )
      .returning({ status: t.status, pendingDeps: t.pendingDeps })
      .prepare(),
    countDownPipeline: db
      .update(p)
      .set({
        remainingTasks: sql`${p.remainingTasks} - 1`,
        failedTasks: sql`${p.failedTasks} + ${placeholder('failed')}`,
        error: sql`coalesce(${p.error}, ${placeholder('error')})`,
        updatedAt: now,
      })
      .where(eq(p.id, bind(p.id, 'id')))
      .returning({ remainingTasks: p.remainingTasks })
      .prepare(),
    endPipeline: db
      .update(p)
      .set({
        status: sql`CASE WHEN ${p.failedTasks} > 0 THEN 'failed' ELSE 'completed' END`,
        completedAt: now,
        updatedAt: now,
      })
      .where(and(eq(p.id, bind(p.id, 'id')), sql`${p.remainingTasks} <= 0`, UNFINISHED_PIPELINE))
      .returning()
      .prepare(),
    cancelPipeline: db
      .update(p)
      .set({ status: 'cancelled', remainingTasks: 0, completedAt: now, updatedAt: now })
      .where(and(eq(p.id, bind(p.id, 'id')), UNFINISHED_PIPELINE))
      .returning()
      .prepare(),
    cancelTasks: db
      .update(t)
      .set({ status: 'cancelled', leaseOwner: null, leaseExpiresAt: null, completedAt: now, updatedAt: now })
      .where(and(eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'id')), sql`NOT ${TERMINAL_TASK}`))
      .prepare(),
    pausePipeline: db
      .update(p)
      .set({ status: 'paused', pauseReason: bind(p.pauseReason, 'reason'), updatedAt: now })
      .where(and(eq(p.id, bind(p.id, 'id')), ACTIVE_PIPELINE))
      .returning()
      .prepare(),
    requeueRunningTasks: db
      .update(t)
      .set({ status: 'ready', leaseOwner: null, leaseExpiresAt: null, availableAt: now, updatedAt: now })
      .where(and(eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'id')), IS_RUNNING))
      .prepare(),
    resumePipeline: db
      .update(p)
      .set({
        status: sql`CASE WHEN ${p.startedAt} IS NULL THEN 'pending' ELSE 'running' END`,
        pauseReason: null,
        updatedAt: now,
      })
      .where(and(eq(p.id, bind(p.id, 'id')), sql`${p.status} = 'paused'`))
      .returning()
      .prepare(),
    countStalledTasks: db
      .select({ count: sql<number>`count(*)` })
      .from(t)
      .where(and(IS_RUNNING, lt(t.leaseExpiresAt, bind(t.leaseExpiresAt, 'now'))))
      .prepare(),
    deleteTerminalPipelines: db
      .delete(p)
      .where(
        inArray(
          p.id,
          db
            .select({ id: p.id })
            .from(p)
            .where(and(TERMINAL_PIPELINE, lt(p.completedAt, bind(p.completedAt, 'before')), NOT_AWAITED_BY_RECOVERY))
            .limit(placeholder('batchSize')),
        ),
      )
      .prepare(),
  };
}

/** {@link ExecutionStore} on SQLite: each method is one synchronous `BEGIN IMMEDIATE` transaction. */
export class SqliteExecutionStore implements ExecutionStore {
  readonly #handle: SqliteHandle;
  readonly #q: ReturnType<typeof prepareStatements>;

  /** Prepares every statement on `handle`; the schema must be migrated. */
  constructor(handle: SqliteHandle) {
    this.#handle = handle;
    this.#q = prepareStatements(handle);
  }

  createPipeline(pipeline: NewPipeline): Promise<{ pipeline: PipelineRow; created: boolean }> {
    return writeTransaction(this.#handle, 'createPipeline', () => this.createPipelineInTransaction(pipeline));
  }

  createPipelines(pipelines: readonly NewPipeline[]): Promise<Array<{ pipeline: PipelineRow; created: boolean }>> {
    return writeTransaction(this.#handle, 'createPipelines', () =>
      pipelines.map((pipeline) => this.createPipelineInTransaction(pipeline)),
    );
  }

  /**
   * The body of {@link createPipeline}, for a transaction already open on this connection:
   * the cron store's in-transaction handoff creates pipelines inside its claim transaction.
   */
  createPipelineInTransaction(pipeline: NewPipeline): { pipeline: PipelineRow; created: boolean } {
    const [row] = this.#q.insertPipeline.all({
      id: pipeline.id,
      workflowName: pipeline.workflowName,
      workflowVersion: pipeline.workflowVersion,
      input: pipeline.input,
      idempotencyKey: pipeline.idempotencyKey,
      scheduledTime: pipeline.scheduledTime,
      remainingTasks: pipeline.tasks.length,
      now: pipeline.now,
    });
    if (row === undefined) {
      // Only the idempotency key can collide (ids are fresh UUIDs): return the execution that holds it.
      const existing = pipeline.idempotencyKey === null ? undefined : this.#byKey(pipeline.idempotencyKey);
      if (existing === undefined)
        throw new DatabaseError(`createPipeline failed: pipeline ${pipeline.id} already exists`);
      return { pipeline: existing, created: false };
    }
    for (const task of pipeline.tasks) {
      this.#q.insertTask.run({
        id: task.id,
        pipelineId: pipeline.id,
        workflowName: pipeline.workflowName,
        taskId: task.taskId,
        position: task.position,
        status: task.pendingDeps === 0 ? 'ready' : 'not_started',
        pendingDeps: task.pendingDeps,
        now: pipeline.now,
      });
    }
    return { pipeline: row, created: true };
  }

  getPipeline(id: string): Promise<PipelineRow | null> {
    return readTransaction(this.#handle, 'getPipeline', () => this.#q.selectPipeline.get({ id }) ?? null);
  }

  getPipelineByIdempotencyKey(key: string): Promise<PipelineRow | null> {
    return readTransaction(this.#handle, 'getPipelineByIdempotencyKey', () => this.#byKey(key) ?? null);
  }

  listPipelines(filter: PipelineFilter): Promise<PipelineRow[]> {
    return readTransaction(this.#handle, 'listPipelines', () =>
      this.#handle.db
        .select()
        .from(p)
        .where(
          and(
            filter.workflowName === undefined ? undefined : eq(p.workflowName, filter.workflowName),
            filter.status === undefined ? undefined : eq(p.status, filter.status),
          ),
        )
        // rowid breaks ties between executions created in the same millisecond: later insert, newer.
        .orderBy(desc(p.createdAt), sql`${p}.rowid DESC`)
        .limit(filter.limit)
        .offset(filter.offset)
        .all(),
    );
  }

  listTasks(pipelineExecutionId: string): Promise<TaskRow[]> {
    return readTransaction(this.#handle, 'listTasks', () =>
      this.#q.selectTasks.all({ pipelineId: pipelineExecutionId }),
    );
  }

  claimTasks(request: ClaimTasksRequest): Promise<ClaimedTask[]> {
    const registered = request.registered.flatMap((r) => r.taskIds.map((id) => `${r.workflowName}\u001f${id}`));
    if (registered.length === 0 || request.limit <= 0) return Promise.resolve([]);
    return writeTransaction(this.#handle, 'claimTasks', () => {
      const params = { now: request.now, registered: encodeTextList(registered), limit: request.limit };
      const candidates = [...this.#q.selectExpired.all(params), ...this.#q.selectReady.all(params)]
        .sort((a, b) => a.availableAt.getTime() - b.availableAt.getTime())
        .slice(0, request.limit);
      if (candidates.length === 0) return [];
      const expired = new Set(candidates.filter((c) => c.status === 'running').map((c) => c.id));
      const tasks = this.#q.leaseTasks.all({
        ids: encodeUuidList(candidates.map((c) => c.id)),
        runnerId: request.runnerId,
        leaseExpiresAt: new Date(dateToMillis(request.now) + request.leaseMs),
        now: request.now,
      });
      const pipelineIds = encodeUuidList([...new Set(tasks.map((task) => task.pipelineExecutionId))]);
      this.#q.startPipelines.run({ ids: pipelineIds, now: request.now });
      const pipelines = new Map(this.#q.selectPipelines.all({ ids: pipelineIds }).map((row) => [row.id, row]));
      const terminal = new Map<string, TaskRow[]>();
      for (const row of this.#q.selectTerminalTasks.all({ ids: pipelineIds })) {
        const list = terminal.get(row.pipelineExecutionId);
        if (list === undefined) terminal.set(row.pipelineExecutionId, [row]);
        else list.push(row);
      }
      return tasks
        .sort((a, b) => a.availableAt.getTime() - b.availableAt.getTime())
        .map((task) => ({
          task,
          pipeline: pipelines.get(task.pipelineExecutionId)!,
          terminalTasks: terminal.get(task.pipelineExecutionId) ?? [],
          leaseExpired: expired.has(task.id),
        }));
    });
  }

  renewLeases(runnerId: string, leases: readonly LeaseRef[], leaseMs: number, now: Date): Promise<string[]> {
    if (leases.length === 0) return Promise.resolve([]);
    return writeTransaction(this.#handle, 'renewLeases', () =>
      this.#q.renewLeases
        .all({
          runnerId,
          ids: encodeUuidList(leases.map((l) => l.taskExecutionId)),
          leases: encodeLeases(leases),
          leaseExpiresAt: new Date(dateToMillis(now) + leaseMs),
          now,
        })
        .map((row) => row.id),
    );
  }

  releaseLeases(runnerId: string, leases: readonly LeaseRef[], now: Date): Promise<number> {
    if (leases.length === 0) return Promise.resolve(0);
    return writeTransaction(
      this.#handle,
      'releaseLeases',
      () =>
        this.#q.releaseLeases.run({
          runnerId,
          ids: encodeUuidList(leases.map((l) => l.taskExecutionId)),
          leases: encodeLeases(leases),
          now,
        }).changes,
    );
  }

  finishTask(request: FinishTaskRequest): Promise<FinishTaskResult> {
    const { outcome, now } = request;
    const columns = outcomeColumns(outcome, now);
    return writeTransaction(this.#handle, 'finishTask', () => {
      const fenced = this.#q.finishTask.get({
        ...columns,
        id: request.taskExecutionId,
        runnerId: request.runnerId,
        attempt: request.attempt,
        now,
      });
      if (fenced === undefined) return { accepted: false, readied: 0, finishedPipeline: null };
      if (outcome.status === 'retry') return { accepted: true, readied: 0, finishedPipeline: null };
      const readied =
        request.dependents.length === 0
          ? 0
          : this.#q.releaseDependents
              .all({ pipelineId: request.pipelineExecutionId, dependents: encodeTextList(request.dependents), now })
              .filter((row) => row.status === 'ready' && row.pendingDeps === 0).length;
      const counted = this.#q.countDownPipeline.get({
        id: request.pipelineExecutionId,
        failed: columns.failed,
        error: outcome.status === 'failed' ? `task ${fenced.taskId} failed: ${outcome.error}` : null,
        now,
      });
      const finished =
        counted !== undefined && counted.remainingTasks <= 0
          ? this.#q.endPipeline.get({ id: request.pipelineExecutionId, now })
          : undefined;
      return { accepted: true, readied, finishedPipeline: finished ?? null };
    });
  }

  cancelPipeline(id: string, now: Date): Promise<PipelineRow | null> {
    return writeTransaction(this.#handle, 'cancelPipeline', () => {
      const cancelled = this.#q.cancelPipeline.get({ id, now });
      if (cancelled === undefined) return this.#q.selectPipeline.get({ id }) ?? null;
      this.#q.cancelTasks.run({ id, now });
      return cancelled;
    });
  }

  pausePipeline(id: string, reason: string | null, now: Date): Promise<PipelineRow | null> {
    return writeTransaction(this.#handle, 'pausePipeline', () => {
      const paused = this.#q.pausePipeline.get({ id, reason, now });
      if (paused === undefined) return this.#q.selectPipeline.get({ id }) ?? null;
      this.#q.requeueRunningTasks.run({ id, now });
      return paused;
    });
  }

  resumePipeline(id: string, now: Date): Promise<PipelineRow | null> {
    return writeTransaction(
      this.#handle,
      'resumePipeline',
      () => this.#q.resumePipeline.get({ id, now }) ?? this.#q.selectPipeline.get({ id }) ?? null,
    );
  }

  countStalledTasks(now: Date): Promise<number> {
    return readTransaction(this.#handle, 'countStalledTasks', () => this.#q.countStalledTasks.get({ now })?.count ?? 0);
  }

  deleteTerminalPipelines(before: Date, batchSize: number): Promise<number> {
    return writeTransaction(
      this.#handle,
      'deleteTerminalPipelines',
      () => this.#q.deleteTerminalPipelines.run({ before, batchSize }).changes,
    );
  }

  #byKey(key: string): PipelineRow | undefined {
    return this.#q.selectPipelineByKey.get({ key });
  }
}
