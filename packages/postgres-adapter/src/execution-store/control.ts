import {
  ACTIVE_PIPELINE_STATUSES,
  MAP_LEASE_OWNER,
  newTaskStatus,
  type PipelineRow,
  RETRYABLE_PIPELINE_STATUSES,
  type RetriedTask,
  TERMINAL_TASK_STATUSES,
  UNFINISHED_PIPELINE_STATUSES,
} from '@orreryjs/core';
import { and, eq, ne, sql } from 'drizzle-orm';
import { arrayParam, bind, encodeUuidList, statusIn, statusNotIn } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb, PostgresHandle } from '../transaction.js';
import { isRunning } from './conditions.js';
import { deleteMapInstances } from './maps.js';

/*
 * Operator control of a pipeline: cancel, pause, resume, retry. Cancel, pause and retry lock the pipeline row
 * first, so a concurrent claim either sees the new state or is seen by it.
 */

/** Builds the control statements once; each is named, so each connection parses it once. */
export function prepareControl({ db, tables, named }: PostgresHandle) {
  const p = tables.pipelineExecutions;
  return {
    resumePipeline: db
      .update(p)
      .set({
        status: sql`CASE WHEN ${p.startedAt} IS NULL THEN 'pending' ELSE 'running' END`,
        pauseReason: null,
        updatedAt: bind(p.updatedAt, 'now'),
      })
      .where(and(eq(p.id, bind(p.id, 'id')), sql`${p.status} = 'paused'`))
      .returning()
      .prepare(named('orrery_resume_pipeline')),
  };
}

export type ControlStatements = ReturnType<typeof prepareControl>;

/** Marks an unfinished pipeline cancelled (with `error` when given); returns it, or nothing when it had ended. */
export function cancelPipelineRow(db: PostgresDb, tables: PostgresTables, id: string, now: Date, error?: string) {
  const p = tables.pipelineExecutions;
  return db
    .update(p)
    .set({
      status: 'cancelled',
      remainingTasks: 0,
      completedAt: now,
      updatedAt: now,
      ...(error === undefined ? {} : { error }),
    })
    .where(and(eq(p.id, id), statusIn(p.status, UNFINISHED_PIPELINE_STATUSES)))
    .returning();
}

/** Cancels the pipeline's tasks that have not ended, dropping their leases. */
export function cancelTasks(db: PostgresDb, tables: PostgresTables, id: string, now: Date) {
  const t = tables.taskExecutions;
  return db
    .update(t)
    .set({ status: 'cancelled', leaseOwner: null, leaseExpiresAt: null, completedAt: now, updatedAt: now })
    .where(and(eq(t.pipelineExecutionId, id), statusNotIn(t.status, TERMINAL_TASK_STATUSES)));
}

/** Marks an active pipeline paused; returns it, or nothing when it was not active. */
export function pausePipelineRow(db: PostgresDb, tables: PostgresTables, id: string, reason: string | null, now: Date) {
  const p = tables.pipelineExecutions;
  return db
    .update(p)
    .set({ status: 'paused', pauseReason: reason, updatedAt: now })
    .where(and(eq(p.id, id), statusIn(p.status, ACTIVE_PIPELINE_STATUSES)))
    .returning();
}

/** Gives the running tasks of a pausing pipeline back: ready again, not a failure. */
export function requeueRunningTasks(db: PostgresDb, tables: PostgresTables, id: string, now: Date) {
  const t = tables.taskExecutions;
  return (
    db
      .update(t)
      .set({ status: 'ready', leaseOwner: null, leaseExpiresAt: null, availableAt: now, updatedAt: now })
      // A map task waiting on its instances stays as it is: its instances are what pause sends back.
      .where(and(eq(t.pipelineExecutionId, id), isRunning(tables), ne(t.leaseOwner, MAP_LEASE_OWNER)))
  );
}

async function selectPipelineIn(tx: PostgresDb, tables: PostgresTables, id: string): Promise<PipelineRow | null> {
  const p = tables.pipelineExecutions;
  const [row] = await tx.select().from(p).where(eq(p.id, id));
  return row ?? null;
}

/**
 * Cancels a pipeline and its unfinished tasks inside `tx` (and takes it out of its groups'
 * queues). Two statements: the task update must run after the pipeline lock is held, on a snapshot that sees every claim committed before it
 * (a single statement's snapshot could predate them and leave a claimed task running).
 */
export async function cancelPipeline(
  tx: PostgresDb,
  tables: PostgresTables,
  id: string,
  now: Date,
  error?: string,
): Promise<PipelineRow | null> {
  const [cancelled] = await cancelPipelineRow(tx, tables, id, now, error);
  if (cancelled === undefined) return selectPipelineIn(tx, tables, id);
  await cancelTasks(tx, tables, id, now);
  if (cancelled.concurrency !== null) await forgetQueuedSlots(tx, tables, id);
  return cancelled;
}

/**
 * Takes a cancelled pipeline out of its groups' queues, so that no queue read passes over it
 * again. Its admitted slots stay until the next admission in their groups forgets them (the
 * one that lets the next pipeline in).
 */
export function forgetQueuedSlots(db: PostgresDb, { concurrencySlots: s }: PostgresTables, id: string) {
  return db.delete(s).where(and(eq(s.pipelineExecutionId, id), sql`NOT ${s.admitted}`));
}

/** Pauses a pipeline and requeues its running tasks inside `tx`; two statements, as {@link cancelPipeline}. */
export async function pausePipeline(
  tx: PostgresDb,
  tables: PostgresTables,
  id: string,
  reason: string | null,
  now: Date,
): Promise<PipelineRow | null> {
  const [paused] = await pausePipelineRow(tx, tables, id, reason, now);
  if (paused === undefined) return selectPipelineIn(tx, tables, id);
  await requeueRunningTasks(tx, tables, id, now);
  return paused;
}

/** Marks a failed or cancelled pipeline running again; returns it, or nothing when it was in another status. */
export function retryPipelineRow(
  db: PostgresDb,
  tables: PostgresTables,
  id: string,
  remainingTasks: number,
  now: Date,
) {
  const p = tables.pipelineExecutions;
  return db
    .update(p)
    .set({
      // A pipeline of concurrency groups re-enters their queue: its admission starts it again.
      status: sql`CASE WHEN ${p.concurrency} IS NULL THEN 'running' ELSE 'pending' END`,
      remainingTasks,
      failedTasks: 0,
      error: null,
      pauseReason: null,
      completedAt: null,
      updatedAt: now,
    })
    .where(and(eq(p.id, id), statusIn(p.status, RETRYABLE_PIPELINE_STATUSES)))
    .returning();
}

/**
 * Sends the listed tasks back to run (ready, or not_started while retried dependencies wait, or
 * while the pipeline is `queued` for its concurrency groups), attempt counters kept.
 */
export function retryTasks(
  db: PostgresDb,
  tables: PostgresTables,
  id: string,
  tasks: readonly RetriedTask[],
  now: Date,
  queued: boolean,
) {
  const t = tables.taskExecutions;
  // Raw SQL: rows from parallel arrays (unnest), which drizzle's builder cannot name as an UPDATE source.
  const source = sql`unnest(${arrayParam(encodeUuidList(tasks.map((task) => task.id)))}::uuid[],
      ${arrayParam(tasks.map((task) => newTaskStatus(task.pendingDeps, queued)))}::text[],
      ${arrayParam(tasks.map((task) => task.pendingDeps))}::int[]) AS v(id, status, pending_deps)`;
  return db
    .update(t)
    .set({
      status: sql`v.status`,
      pendingDeps: sql`v.pending_deps`,
      // A task that sleeps before it starts sleeps again.
      availableAt: sql`${sql.param(now, t.availableAt)}::timestamptz + ${t.delayMs} * interval '1 millisecond'`,
      leaseOwner: null,
      leaseExpiresAt: null,
      completedAt: null,
      // A wait task waits anew, for its whole timeout.
      waitsUntil: null,
      updatedAt: now,
    })
    .from(source)
    .where(and(sql`${t.id} = v.id`, eq(t.pipelineExecutionId, id)));
}

/** Runs a failed or cancelled pipeline again inside `tx` (see ExecutionStore.retryPipeline); the pipeline row is locked first. */
export async function retryPipeline(
  tx: PostgresDb,
  tables: PostgresTables,
  id: string,
  tasks: readonly RetriedTask[],
  now: Date,
): Promise<PipelineRow | null> {
  const [retried] = await retryPipelineRow(tx, tables, id, tasks.length, now);
  if (retried === undefined) return selectPipelineIn(tx, tables, id);
  if (tasks.length > 0) {
    // A retried map task maps anew: its earlier instances go.
    await deleteMapInstances(tx, tables, id, encodeUuidList(tasks.map((task) => task.id)));
    await retryTasks(tx, tables, id, tasks, now, retried.concurrency !== null);
  }
  return retried;
}
