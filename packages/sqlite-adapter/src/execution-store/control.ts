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
import { bind, statusIn, statusNotIn } from '../codec.js';
import type { SqliteHandle } from '../transaction.js';
import { isRunning } from './conditions.js';
import type { MapStatements } from './maps.js';
import type { PipelineStatements } from './pipelines.js';

/*
 * Operator control of a pipeline: cancel, pause, resume, retry, each inside one BEGIN IMMEDIATE
 * transaction, so a claim sees either the old state or the new one.
 */

/** Prepares the control statements once on the connection. */
export function prepareControl({ db, tables }: SqliteHandle) {
  const { pipelineExecutions: p, taskExecutions: t } = tables;
  const now = bind(t.updatedAt, 'now');
  return {
    cancelPipelineRow: db
      .update(p)
      .set({
        status: 'cancelled',
        remainingTasks: 0,
        completedAt: now,
        updatedAt: now,
        error: sql`coalesce(${bind(p.error, 'error')}, ${p.error})`,
      })
      .where(and(eq(p.id, bind(p.id, 'id')), statusIn(p.status, UNFINISHED_PIPELINE_STATUSES)))
      .returning()
      .prepare(),
    // Takes a cancelled pipeline out of its groups' queues, so that no queue read passes over it again. Its
    // admitted slots stay until the next admission in their groups forgets them (the one that lets the next in).
    forgetQueuedSlots: db
      .delete(tables.concurrencySlots)
      .where(
        and(
          eq(tables.concurrencySlots.pipelineExecutionId, bind(tables.concurrencySlots.pipelineExecutionId, 'id')),
          sql`NOT ${tables.concurrencySlots.admitted}`,
        ),
      )
      .prepare(),
    cancelTasks: db
      .update(t)
      .set({ status: 'cancelled', leaseOwner: null, leaseExpiresAt: null, completedAt: now, updatedAt: now })
      .where(
        and(
          eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'id')),
          statusNotIn(t.status, TERMINAL_TASK_STATUSES),
        ),
      )
      .prepare(),
    pausePipelineRow: db
      .update(p)
      .set({ status: 'paused', pauseReason: bind(p.pauseReason, 'reason'), updatedAt: now })
      .where(and(eq(p.id, bind(p.id, 'id')), statusIn(p.status, ACTIVE_PIPELINE_STATUSES)))
      .returning()
      .prepare(),
    requeueRunningTasks: db
      .update(t)
      .set({ status: 'ready', leaseOwner: null, leaseExpiresAt: null, availableAt: now, updatedAt: now })
      // A map task waiting on its instances stays as it is: its instances are what pause sends back.
      .where(
        and(
          eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'id')),
          isRunning(tables),
          ne(t.leaseOwner, MAP_LEASE_OWNER),
        ),
      )
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
    retryPipelineRow: db
      .update(p)
      .set({
        // A pipeline of concurrency groups re-enters their queue: its admission starts it again.
        status: sql`CASE WHEN ${p.concurrency} IS NULL THEN 'running' ELSE 'pending' END`,
        remainingTasks: bind(p.remainingTasks, 'remainingTasks'),
        failedTasks: 0,
        error: null,
        pauseReason: null,
        completedAt: null,
        updatedAt: now,
      })
      .where(and(eq(p.id, bind(p.id, 'id')), statusIn(p.status, RETRYABLE_PIPELINE_STATUSES)))
      .returning()
      .prepare(),
    // Attempt counters stay: the retry policy and `info.attempt` go on counting.
    // Differs by necessity: no unnest to update every retried task in one statement; it runs once per task.
    retryTasks: db
      .update(t)
      .set({
        status: bind(t.status, 'status'),
        pendingDeps: bind(t.pendingDeps, 'pendingDeps'),
        // A task that sleeps before it starts sleeps again.
        availableAt: sql`${now} + ${t.delayMs}`,
        leaseOwner: null,
        leaseExpiresAt: null,
        completedAt: null,
        // A wait task waits anew, for its whole timeout.
        waitsUntil: null,
        updatedAt: now,
      })
      .where(and(eq(t.id, bind(t.id, 'taskId')), eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'id'))))
      .prepare(),
  };
}

export type ControlStatements = ReturnType<typeof prepareControl>;

/** Cancels a pipeline (with `error` when given) and its unfinished tasks inside the caller's write transaction. */
export function cancelPipeline(
  q: { control: ControlStatements; pipelines: PipelineStatements },
  id: string,
  now: Date,
  error: string | null = null,
): PipelineRow | null {
  const cancelled = q.control.cancelPipelineRow.get({ id, now, error });
  if (cancelled === undefined) return q.pipelines.selectPipeline.get({ id }) ?? null;
  q.control.cancelTasks.run({ id, now });
  if (cancelled.concurrency !== null) q.control.forgetQueuedSlots.run({ id });
  return cancelled;
}

/** Pauses a pipeline and requeues its running tasks inside the caller's write transaction. */
export function pausePipeline(
  q: { control: ControlStatements; pipelines: PipelineStatements },
  id: string,
  reason: string | null,
  now: Date,
): PipelineRow | null {
  const paused = q.control.pausePipelineRow.get({ id, reason, now });
  if (paused === undefined) return q.pipelines.selectPipeline.get({ id }) ?? null;
  q.control.requeueRunningTasks.run({ id, now });
  return paused;
}

/** Runs a failed or cancelled pipeline again inside the caller's write transaction (see ExecutionStore.retryPipeline). */
export function retryPipeline(
  q: { control: ControlStatements; pipelines: PipelineStatements; maps: MapStatements },
  id: string,
  tasks: readonly RetriedTask[],
  now: Date,
): PipelineRow | null {
  const retried = q.control.retryPipelineRow.get({ id, remainingTasks: tasks.length, now });
  if (retried === undefined) return q.pipelines.selectPipeline.get({ id }) ?? null;
  for (const task of tasks) {
    // A retried map task maps anew: its earlier instances go.
    q.maps.deleteMapInstances.run({ id, taskRowId: task.id });
    const status = newTaskStatus(task.pendingDeps, retried.concurrency !== null);
    q.control.retryTasks.run({ id, taskId: task.id, status, pendingDeps: task.pendingDeps, now });
  }
  return retried;
}
