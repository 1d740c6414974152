import type { LeaseRef, RenewLeasesOptions } from '@orreryjs/core';
import { and, eq, lt, sql } from 'drizzle-orm';
import { bind, encodeTextList, encodeUuidList, textListSql, uuidListSql, uuidToBytes } from '../codec.js';
import type { SqliteHandle } from '../transaction.js';
import { withEndedAttempt } from './attempts.js';
import { heldBy, isRunning, later } from './conditions.js';

/*
 * Leases: a running task is held by one runner until its lease expires; renewals and releases
 * are fenced on (owner, attempt), so a runner that lost a lease cannot touch its successor's.
 */

/** `(id, attempt)` fences of a lease list as one JSON parameter matched by the lease fence. */
function encodeLeases(leases: readonly LeaseRef[]): string {
  return encodeTextList(leases.map((l) => `${uuidToBytes(l.taskExecutionId).toString('hex')}:${l.attempt}`));
}

/** Prepares the lease statements once on the connection. */
export function prepareLease({ db, tables }: SqliteHandle) {
  const t = tables.taskExecutions;
  const now = bind(t.updatedAt, 'now');
  // The id list lets SQLite reach rows through the primary key; the (id, attempt) list is the fence.
  const leaseFence = and(
    eq(t.leaseOwner, bind(t.leaseOwner, 'runnerId')),
    isRunning(tables),
    sql`${t.id} IN ${uuidListSql(sql.placeholder('ids'))}`,
    sql`lower(hex(${t.id})) || ':' || ${t.attempt} IN ${textListSql(sql.placeholder('leases'))}`,
  );
  return {
    // Gives a claimed task back unstarted: ready from `availableAt`, no lease, its claim's attempt undone; fenced.
    deferTask: db
      .update(t)
      .set({
        status: 'ready',
        availableAt: bind(t.availableAt, 'availableAt'),
        leaseOwner: null,
        leaseExpiresAt: null,
        attempt: sql`${t.attempt} - 1`,
        startedAt: null,
        waitsUntil: sql`coalesce(${t.waitsUntil}, ${bind(t.waitsUntil, 'waitsUntil')})`,
        updatedAt: now,
      })
      .where(heldBy(tables))
      .returning({ attempt: t.attempt })
      .prepare(),
    renewLeases: db
      .update(t)
      .set({
        leaseExpiresAt: bind(t.leaseExpiresAt, 'leaseExpiresAt'),
        startedAt: sql`CASE WHEN ${sql.placeholder('started')} THEN coalesce(${t.startedAt}, ${now}) ELSE ${t.startedAt} END`,
        updatedAt: now,
      })
      .where(leaseFence)
      .returning({ id: t.id })
      .prepare(),
    releaseLeases: db
      .update(t)
      .set({
        status: 'ready',
        // A started attempt given back joins the history; one claimed ahead and never started was no attempt.
        attemptHistory: sql`CASE WHEN ${t.startedAt} IS NULL THEN ${t.attemptHistory} ELSE ${withEndedAttempt(t, now, sql`'released'`, sql`NULL`)} END`,
        leaseOwner: null,
        leaseExpiresAt: null,
        availableAt: now,
        updatedAt: now,
      })
      .where(leaseFence)
      .prepare(),
    countStalledTasks: db
      .select({ count: sql<number>`count(*)` })
      .from(t)
      .where(and(isRunning(tables), lt(t.leaseExpiresAt, bind(t.leaseExpiresAt, 'now'))))
      .prepare(),
  };
}

export type LeaseStatements = ReturnType<typeof prepareLease>;

/** Extends the leases `runnerId` still holds; returns their task ids. With `started`, records the start of those claimed ahead. */
export function renewLeases(
  q: LeaseStatements,
  runnerId: string,
  leases: readonly LeaseRef[],
  leaseMs: number,
  now: Date,
  { started = false }: RenewLeasesOptions = {},
): string[] {
  return q.renewLeases
    .all({
      runnerId,
      ids: encodeUuidList(leases.map((l) => l.taskExecutionId)),
      leases: encodeLeases(leases),
      leaseExpiresAt: later(now, leaseMs),
      started: started ? 1 : 0,
      now,
    })
    .map((row) => row.id);
}

/** Gives leases back: their tasks become ready again. Returns how many were still held. */
export function releaseLeases(q: LeaseStatements, runnerId: string, leases: readonly LeaseRef[], now: Date): number {
  return q.releaseLeases.run({
    runnerId,
    ids: encodeUuidList(leases.map((l) => l.taskExecutionId)),
    leases: encodeLeases(leases),
    now,
  }).changes;
}
