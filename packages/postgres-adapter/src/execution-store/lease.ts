import type { DeferTaskRequest, LeaseRef, RenewLeasesOptions } from '@orreryjs/core';
import { and, eq, lt, sql } from 'drizzle-orm';
import { bind, encodeUuidList, inUuidList } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb, PostgresHandle } from '../transaction.js';
import { withEndedAttempt } from './attempts.js';
import { heldBy, isRunning, later } from './conditions.js';

/*
 * Leases: a running task is held by one runner until its lease expires; renewals and releases
 * are fenced on (owner, attempt), so a runner that lost a lease cannot touch its successor's.
 */

/** Builds the lease statements once; each is named, so each connection parses it once. */
export function prepareLease({ db, tables, named }: PostgresHandle) {
  const t = tables.taskExecutions;
  const now = bind(t.updatedAt, 'now');
  // The pipeline list lets Postgres reach rows through the (pipeline, task id) key; the
  // (pipeline, task id, attempt) triples are the fence.
  const leaseFence = and(
    eq(t.leaseOwner, bind(t.leaseOwner, 'runnerId')),
    isRunning(tables),
    inUuidList(t.pipelineExecutionId, sql.placeholder('pipelineIds')),
    sql`(${t.pipelineExecutionId}, ${t.taskId}, ${t.attempt}) IN (SELECT * FROM unnest(${sql.placeholder('pipelineIds')}::uuid[], ${sql.placeholder('taskIds')}::text[], ${sql.placeholder('attempts')}::int[]))`,
  );
  return {
    renewLeases: db
      .update(t)
      .set({
        leaseExpiresAt: bind(t.leaseExpiresAt, 'leaseExpiresAt'),
        startedAt: sql`CASE WHEN ${sql.placeholder('started')}::boolean THEN coalesce(${t.startedAt}, ${now}) ELSE ${t.startedAt} END`,
        updatedAt: now,
      })
      .where(leaseFence)
      .returning({ id: t.id })
      .prepare(named('orrery_renew_leases')),
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
      .prepare(named('orrery_release_leases')),
    countStalledTasks: db
      .select({ count: sql<number>`count(*)::int` })
      .from(t)
      .where(and(isRunning(tables), lt(t.leaseExpiresAt, bind(t.leaseExpiresAt, 'now'))))
      .prepare(named('orrery_count_stalled_tasks')),
  };
}

export type LeaseStatements = ReturnType<typeof prepareLease>;

/** The fence's parameters: each lease's task key and attempt, as parallel arrays. */
function leaseKeys(leases: readonly LeaseRef[]) {
  return {
    pipelineIds: encodeUuidList(leases.map((l) => l.pipelineExecutionId)),
    taskIds: leases.map((l) => l.taskId),
    attempts: leases.map((l) => l.attempt),
  };
}

/** Extends the leases `runnerId` still holds; returns their task ids. With `started`, records the start of those claimed ahead. */
export async function renewLeases(
  q: LeaseStatements,
  runnerId: string,
  leases: readonly LeaseRef[],
  leaseMs: number,
  now: Date,
  { started = false }: RenewLeasesOptions = {},
): Promise<string[]> {
  const rows = await q.renewLeases.execute({
    runnerId,
    ...leaseKeys(leases),
    leaseExpiresAt: later(now, leaseMs),
    started,
    now,
  });
  return rows.map((row) => row.id);
}

/** Gives leases back: their tasks become ready again. Returns how many were still held. */
export async function releaseLeases(
  q: LeaseStatements,
  runnerId: string,
  leases: readonly LeaseRef[],
  now: Date,
): Promise<number> {
  const result = await q.releaseLeases.execute({
    runnerId,
    ...leaseKeys(leases),
    now,
  });
  return result.rowCount ?? 0;
}

/** Gives a claimed task back unstarted: ready from `availableAt`, no lease, its claim's attempt undone; fenced on the lease. */
export function deferTask(db: PostgresDb, tables: PostgresTables, request: DeferTaskRequest) {
  const t = tables.taskExecutions;
  return db
    .update(t)
    .set({
      status: 'ready',
      availableAt: request.availableAt,
      leaseOwner: null,
      leaseExpiresAt: null,
      attempt: sql`${t.attempt} - 1`,
      startedAt: null,
      waitsUntil: sql`coalesce(${t.waitsUntil}, ${sql.param(request.waitsUntil ?? null, t.waitsUntil)})`,
      updatedAt: request.now,
    })
    .where(heldBy(tables, request))
    .returning({ attempt: t.attempt });
}
