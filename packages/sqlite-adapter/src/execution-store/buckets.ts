import { deferredUntil, type RateLimitedStart, type RateLimitedStartResult, rateWindowMs } from '@orreryjs/core';
import { and, asc, count, eq, gt, lte, sql } from 'drizzle-orm';
import { bind } from '../codec.js';
import type { SqliteHandle } from '../transaction.js';
import { heldBy, later } from './conditions.js';
import type { LeaseStatements } from './lease.js';

/*
 * Rate limits: the start of a rate-limited attempt is counted, or the task given back, inside
 * one BEGIN IMMEDIATE transaction: writers take turns, so the count is exact.
 */

/** Prepares the rate-limit statements once on the connection. */
export function prepareRateLimits({ db, tables }: SqliteHandle) {
  const { rateLimitStarts: r, rateLimitBuckets: b, taskExecutions: t } = tables;
  const ofBucket = eq(r.bucket, bind(r.bucket, 'bucket'));
  const inWindow = gt(r.startedAt, bind(r.startedAt, 'from'));
  return {
    // The task's row while this attempt holds its lease: the fence of the start and of the give-back.
    selectHeldLease: db.select({ attempt: t.attempt }).from(t).where(heldBy(tables)).prepare(),
    // Forgets the bucket's starts that no window counts any more.
    deleteExpiredStarts: db
      .delete(r)
      .where(and(ofBucket, lte(r.expiresAt, bind(r.expiresAt, 'now'))))
      .prepare(),
    // How many starts the bucket had in the window ending now.
    countStarts: db.select({ count: count() }).from(r).where(and(ofBucket, inWindow)).prepare(),
    // The `offset`-th oldest start of the window: when it leaves the window, the bucket has room.
    selectNthStart: db
      .select({ startedAt: r.startedAt })
      .from(r)
      .where(and(ofBucket, inWindow))
      .orderBy(asc(r.startedAt))
      .limit(1)
      .offset(sql.placeholder('offset'))
      .prepare(),
    // Counts this start in the bucket for its period and the guard (see rateWindowMs).
    insertStart: db
      .insert(r)
      .values({
        bucket: bind(r.bucket, 'bucket'),
        startedAt: bind(r.startedAt, 'now'),
        expiresAt: bind(r.expiresAt, 'expiresAt'),
      })
      .prepare(),
    // One more task given back for the instant `roomAt`; returns the herd's size before it.
    joinHerd: db
      .insert(b)
      .values({ bucket: bind(b.bucket, 'bucket'), herdAt: bind(b.herdAt, 'roomAt'), herdSize: 1 })
      .onConflictDoUpdate({
        target: b.bucket,
        set: {
          herdSize: sql`CASE WHEN ${b.herdAt} = excluded.herd_at THEN ${b.herdSize} + 1 ELSE 1 END`,
          herdAt: sql`excluded.herd_at`,
        },
      })
      .returning({ before: sql<number>`${b.herdSize} - 1` })
      .prepare(),
  };
}

export type RateLimitStatements = ReturnType<typeof prepareRateLimits>;

/** Counts the start of a rate-limited attempt or gives its task back, inside the caller's write transaction. */
export function startRateLimitedIn(
  q: { buckets: RateLimitStatements; lease: LeaseStatements },
  request: RateLimitedStart,
): RateLimitedStartResult {
  // Differs by necessity: no lockBucket (BEGIN IMMEDIATE serialises writers) and no selectDatabaseTime (one host's clock).
  const { bucket, now } = request;
  const held = q.buckets.selectHeldLease.get({ ...request });
  if (held === undefined) return { status: 'lost' };
  const windowMs = rateWindowMs(request);
  const from = new Date(now.getTime() - windowMs);
  q.buckets.deleteExpiredStarts.run({ bucket, now });
  const started = q.buckets.countStarts.get({ bucket, from })?.count ?? 0;
  if (started < request.limit) {
    q.buckets.insertStart.run({ bucket, now, expiresAt: later(now, windowMs) });
    return { status: 'started' };
  }
  const oldest = q.buckets.selectNthStart.get({ bucket, from, offset: started - request.limit });
  const roomAt = later(oldest!.startedAt, windowMs);
  const herd = q.buckets.joinHerd.get({ bucket, roomAt });
  const availableAt = deferredUntil(roomAt, herd?.before ?? 0, request);
  q.lease.deferTask.run({ ...request, availableAt, now, waitsUntil: null });
  return { status: 'deferred', availableAt };
}
