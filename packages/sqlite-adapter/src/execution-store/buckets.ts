import {
  type RateGateStep,
  type RateLimitedStart,
  type RateLimitedStartResult,
  rateGate,
  runSteps,
} from '@orreryjs/core';
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
    // Whether a lease's attempt still holds it: the fence of the start and of the give-back. Differs by
    // necessity: one lease per statement (no unnest), each a key lookup in process.
    selectHeldLeases: db.select({ attempt: t.attempt }).from(t).where(heldBy(tables)).prepare(),
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
    // Counts a start now in the bucket for its period and the guard (see rateWindowMs). Differs by necessity: one row
    // per statement.
    insertStarts: db
      .insert(r)
      .values({
        bucket: bind(r.bucket, 'bucket'),
        startedAt: bind(r.startedAt, 'now'),
        expiresAt: bind(r.expiresAt, 'expiresAt'),
      })
      .prepare(),
    // `n` more tasks given back for the instant `roomAt`; returns the herd's size before them.
    joinHerd: db
      .insert(b)
      .values({ bucket: bind(b.bucket, 'bucket'), herdAt: bind(b.herdAt, 'roomAt'), herdSize: bind(b.herdSize, 'n') })
      .onConflictDoUpdate({
        target: b.bucket,
        set: {
          herdSize: sql`CASE WHEN ${b.herdAt} = excluded.herd_at THEN ${b.herdSize} + excluded.herd_size ELSE excluded.herd_size END`,
          herdAt: sql`excluded.herd_at`,
        },
      })
      .returning({ before: sql<number>`${b.herdSize} - ${sql.placeholder('n')}` })
      .prepare(),
  };
}

export type RateLimitStatements = ReturnType<typeof prepareRateLimits>;

/** Counts the starts of rate-limited attempts or gives their tasks back, inside the caller's write transaction. */
export function startRateLimitedIn(
  q: { buckets: RateLimitStatements; lease: LeaseStatements },
  requests: readonly RateLimitedStart[],
  now: Date,
): RateLimitedStartResult[] {
  // Differs by necessity: no lockBucket (BEGIN IMMEDIATE serialises writers) and no selectDatabaseTime (one host's clock).
  const isHeld = (index: number) => q.buckets.selectHeldLeases.get({ ...requests[index]! }) !== undefined;
  return runSteps(rateGate(requests, isHeld, now), (step: RateGateStep) => {
    switch (step.kind) {
      case 'count':
        q.buckets.deleteExpiredStarts.run({ bucket: step.bucket, now });
        return q.buckets.countStarts.get({ bucket: step.bucket, from: step.from })?.count ?? 0;
      case 'record':
        for (let n = 0; n < step.n; n += 1) {
          q.buckets.insertStarts.run({ bucket: step.bucket, now, expiresAt: later(now, step.windowMs) });
        }
        return undefined;
      case 'nthStart':
        return q.buckets.selectNthStart.get({ bucket: step.bucket, from: step.from, offset: step.offset })!.startedAt;
      case 'joinHerd':
        return q.buckets.joinHerd.get({ bucket: step.bucket, roomAt: step.roomAt, n: step.n })?.before ?? 0;
      case 'giveBack':
        return q.lease.deferTask.run({
          ...requests[step.index]!,
          availableAt: step.availableAt,
          now,
          waitsUntil: null,
        });
    }
  });
}
