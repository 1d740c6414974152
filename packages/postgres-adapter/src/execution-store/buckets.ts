import { deferredUntil, type RateLimitedStart, type RateLimitedStartResult, rateWindowMs } from '@orreryjs/core';
import { and, asc, count, eq, gt, lte, sql } from 'drizzle-orm';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb } from '../transaction.js';
import { heldBy, later, lockKeys } from './conditions.js';
import { deferTask } from './lease.js';

/*
 * Rate limits: the start of a rate-limited attempt is counted, or the task given back, in one
 * transaction that holds its bucket's advisory lock, on the database's clock: exact across
 * every runner.
 */

/** Differs by necessity: SQLite's writers take turns (BEGIN IMMEDIATE); Postgres locks the bucket. */
export function lockBucket(db: PostgresDb, tables: PostgresTables, bucket: string) {
  return lockKeys(db, tables, 'rate', [bucket]);
}

/**
 * Differs by necessity: the database's clock, read once the bucket is locked, so that every
 * runner counts on one time line (SQLite has one host's clock).
 */
export function selectDatabaseTime(db: PostgresDb) {
  // Raw SQL: a clock read, which drizzle's builder has no function for.
  return db.execute<{ ms: number }>(sql`SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms`);
}

/** The task's row while this attempt holds its lease: the fence of the start and of the give-back. */
export function selectHeldLease(db: PostgresDb, tables: PostgresTables, lease: RateLimitedStart) {
  const t = tables.taskExecutions;
  return db.select({ attempt: t.attempt }).from(t).where(heldBy(tables, lease)).for('update');
}

/** Forgets the bucket's starts that no window counts any more. */
export function deleteExpiredStarts(db: PostgresDb, { rateLimitStarts: r }: PostgresTables, bucket: string, now: Date) {
  return db.delete(r).where(and(eq(r.bucket, bucket), lte(r.expiresAt, now)));
}

/** How many starts the bucket had in the window ending now. */
export function countStarts(db: PostgresDb, { rateLimitStarts: r }: PostgresTables, bucket: string, from: Date) {
  return db
    .select({ count: count() })
    .from(r)
    .where(and(eq(r.bucket, bucket), gt(r.startedAt, from)));
}

/** The `offset`-th oldest start of the window: when it leaves the window, the bucket has room. */
export function selectNthStart(
  db: PostgresDb,
  { rateLimitStarts: r }: PostgresTables,
  bucket: string,
  from: Date,
  offset: number,
) {
  return db
    .select({ startedAt: r.startedAt })
    .from(r)
    .where(and(eq(r.bucket, bucket), gt(r.startedAt, from)))
    .orderBy(asc(r.startedAt))
    .limit(1)
    .offset(offset);
}

/** Counts this start in the bucket for `windowMs` (its period and the guard, see rateWindowMs). */
export function insertStart(
  db: PostgresDb,
  { rateLimitStarts: r }: PostgresTables,
  bucket: string,
  now: Date,
  windowMs: number,
) {
  return db.insert(r).values({ bucket, startedAt: now, expiresAt: later(now, windowMs) });
}

/**
 * One more task given back for the instant `roomAt`: the bucket's herd grows when it waits for
 * the same instant, else starts again at one. Returns the herd's size before this task.
 */
export function joinHerd(db: PostgresDb, { rateLimitBuckets: b }: PostgresTables, bucket: string, roomAt: Date) {
  return db
    .insert(b)
    .values({ bucket, herdAt: roomAt, herdSize: 1 })
    .onConflictDoUpdate({
      target: b.bucket,
      set: {
        herdSize: sql`CASE WHEN ${b.herdAt} = excluded.herd_at THEN ${b.herdSize} + 1 ELSE 1 END`,
        herdAt: sql`excluded.herd_at`,
      },
    })
    .returning({ before: sql<number>`${b.herdSize} - 1` });
}

/** Counts the start of a rate-limited attempt or gives its task back, inside `tx` (see ExecutionStore.startRateLimited). */
export async function startRateLimitedIn(
  tx: PostgresDb,
  tables: PostgresTables,
  request: RateLimitedStart,
): Promise<RateLimitedStartResult> {
  await lockBucket(tx, tables, request.bucket);
  const [held] = await selectHeldLease(tx, tables, request);
  if (held === undefined) return { status: 'lost' };
  const { rows } = await selectDatabaseTime(tx);
  const now = new Date(rows[0]!.ms);
  const windowMs = rateWindowMs(request);
  const from = new Date(now.getTime() - windowMs);
  await deleteExpiredStarts(tx, tables, request.bucket, now);
  const [{ count: started } = { count: 0 }] = await countStarts(tx, tables, request.bucket, from);
  if (started < request.limit) {
    await insertStart(tx, tables, request.bucket, now, windowMs);
    return { status: 'started' };
  }
  const [oldest] = await selectNthStart(tx, tables, request.bucket, from, started - request.limit);
  const roomAt = later(oldest!.startedAt, windowMs);
  const [herd] = await joinHerd(tx, tables, request.bucket, roomAt);
  const availableAt = deferredUntil(roomAt, herd?.before ?? 0, request);
  await deferTask(tx, tables, { ...request, availableAt, now });
  return { status: 'deferred', availableAt };
}
