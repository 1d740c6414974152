import type { LeaseRef } from '@orreryjs/core';
import { and, eq, getTableColumns, sql } from 'drizzle-orm';
import { getTableConfig } from 'drizzle-orm/pg-core';
import { arrayParam, dateToIso } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb } from '../transaction.js';

/*
 * The execution store's shared predicates and helpers: every file of the port takes them from
 * here, so that no file borrows another's and no two files import each other.
 */

/** `running` tasks: a literal, so that a generic plan can use the expired-lease index. */
export function isRunning({ taskExecutions: t }: PostgresTables) {
  return sql`${t.status} = 'running'`;
}

/** `now + ms` as a Date, from `now` truncated to the millisecond. */
export function later(now: Date, ms: number): Date {
  return new Date(Date.parse(dateToIso(now)) + ms);
}

/**
 * The columns of a task row as the port returns it: without the bookkeeping `updated_at`, nor
 * `priority` (the pipeline's, copied here only for the claim's index walk), `delay_ms` (read
 * only by the statements that ready the task) and `wait_signal` (read only by a signal).
 */
export function taskRowColumns({ taskExecutions: t }: PostgresTables) {
  const {
    updatedAt: _updatedAt,
    priority: _priority,
    delayMs: _delayMs,
    waitSignal: _waitSignal,
    ...columns
  } = getTableColumns(t);
  return columns;
}

/** The advisory-lock key space of this schema: tenants sharing a database never share a lock. */
function lockScope(tables: PostgresTables, space: string): string {
  return `orrery.${space}:${getTableConfig(tables.concurrencySlots).schema ?? 'public'}:`;
}

/**
 * Takes the advisory locks of `keys` in `space` (concurrency groups, rate buckets) for the
 * transaction, in key order, so that two transactions sharing keys never deadlock.
 */
export function lockKeys(db: PostgresDb, tables: PostgresTables, space: string, keys: readonly string[]) {
  // Raw SQL: advisory locks have no builder.
  return db.execute(
    sql`SELECT pg_advisory_xact_lock(hashtextextended(${lockScope(tables, space)} || k, 0))
      FROM unnest(${arrayParam([...keys].sort())}::text[]) AS k ORDER BY k`,
  );
}

/** Tries the advisory lock of `key` in `space` without waiting; its row says whether it was taken. */
export function tryLockKey(db: PostgresDb, tables: PostgresTables, space: string, key: string) {
  // Raw SQL: advisory locks have no builder.
  return db.execute<{ locked: boolean }>(
    sql`SELECT pg_try_advisory_xact_lock(hashtextextended(${lockScope(tables, space) + key}, 0)) AS locked`,
  );
}

/** The task of a lease while this attempt still holds it: running, leased to `runnerId`, at `attempt`. */
export function heldBy(
  tables: PostgresTables,
  lease: Pick<LeaseRef, 'pipelineExecutionId' | 'taskId' | 'attempt'> & { runnerId: string },
) {
  const t = tables.taskExecutions;
  return and(
    eq(t.pipelineExecutionId, lease.pipelineExecutionId),
    eq(t.taskId, lease.taskId),
    isRunning(tables),
    eq(t.leaseOwner, lease.runnerId),
    eq(t.attempt, lease.attempt),
  );
}
