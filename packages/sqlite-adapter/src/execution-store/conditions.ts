import { and, eq, getTableColumns, sql } from 'drizzle-orm';
import { bind, dateToMillis } from '../codec.js';
import type { SqliteTables } from '../schema.js';

/*
 * The execution store's shared predicates and helpers: every file of the port takes them from
 * here, so that no file borrows another's and no two files import each other.
 */

/** `running` tasks: a literal, so that SQLite matches it to the expired-lease index. */
export function isRunning({ taskExecutions: t }: SqliteTables) {
  return sql`${t.status} = 'running'`;
}

/** `now + ms` as a Date, from `now` truncated to the millisecond. */
export function later(now: Date, ms: number): Date {
  return new Date(dateToMillis(now) + ms);
}

/**
 * The columns of a task row as the port returns it: without the bookkeeping `updated_at`, nor
 * `priority` (the pipeline's, copied here only for the claim's index walk), `delay_ms` (read
 * only by the statements that ready the task) and `wait_signal` (read only by a signal).
 */
export function taskRowColumns({ taskExecutions: t }: SqliteTables) {
  const {
    updatedAt: _updatedAt,
    priority: _priority,
    delayMs: _delayMs,
    waitSignal: _waitSignal,
    ...columns
  } = getTableColumns(t);
  return columns;
}

/** The task of a lease while this attempt still holds it (bound by name: pipelineExecutionId, taskId, runnerId, attempt). */
export function heldBy(tables: SqliteTables) {
  const t = tables.taskExecutions;
  return and(
    eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineExecutionId')),
    eq(t.taskId, bind(t.taskId, 'taskId')),
    isRunning(tables),
    eq(t.leaseOwner, bind(t.leaseOwner, 'runnerId')),
    eq(t.attempt, bind(t.attempt, 'attempt')),
  );
}
