import {
  type RateGateStep,
  type RateLimitedStart,
  type RateLimitedStartResult,
  rateGate,
  runStepsAsync,
} from '@orreryjs/core';
import { and, asc, count, eq, gt, lte, sql } from 'drizzle-orm';
import { arrayParam, encodeUuidList } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb } from '../transaction.js';
import { isRunning, later, lockKeys } from './conditions.js';
import { deferTask } from './lease.js';

/*
 * Rate limits: the start of a rate-limited attempt is counted, or the task given back, in one
 * transaction that holds its bucket's advisory lock, on the database's clock: exact across
 * every runner.
 */

/** Differs by necessity: SQLite's writers take turns (BEGIN IMMEDIATE); Postgres locks the buckets, in name order. */
export function lockBucket(db: PostgresDb, tables: PostgresTables, buckets: readonly string[]) {
  return lockKeys(db, tables, 'rate', buckets);
}

/**
 * Differs by necessity: the database's clock, read once the buckets are locked, so that every
 * runner counts on one time line (SQLite has one host's clock).
 */
export function selectDatabaseTime(db: PostgresDb) {
  // Raw SQL: a clock read, which drizzle's builder has no function for.
  return db.execute<{ ms: number }>(sql`SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms`);
}

/** Which of these leases their attempts still hold, rows locked: the fence of the starts and of the give-backs. */
export function selectHeldLeases(db: PostgresDb, tables: PostgresTables, leases: readonly RateLimitedStart[]) {
  const t = tables.taskExecutions;
  // Raw SQL: the leases as rows of parallel arrays (unnest), which drizzle's builder cannot compare tuples with.
  const held = sql`(${t.pipelineExecutionId}, ${t.taskId}, ${t.leaseOwner}, ${t.attempt}) IN (SELECT * FROM unnest(
    ${arrayParam(encodeUuidList(leases.map((l) => l.pipelineExecutionId)))}::uuid[],
    ${arrayParam(leases.map((l) => l.taskId))}::text[],
    ${arrayParam(leases.map((l) => l.runnerId))}::text[],
    ${arrayParam(leases.map((l) => l.attempt))}::int[]))`;
  return db
    .select({ pipelineExecutionId: t.pipelineExecutionId, taskId: t.taskId })
    .from(t)
    .where(and(isRunning(tables), held))
    .for('update');
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

/** Counts `n` starts now in the bucket, for `windowMs` (their period and the guard, see rateWindowMs). */
export function insertStarts(
  db: PostgresDb,
  { rateLimitStarts: r }: PostgresTables,
  bucket: string,
  now: Date,
  windowMs: number,
  n: number,
) {
  const row = { bucket, startedAt: now, expiresAt: later(now, windowMs) };
  return db.insert(r).values(Array.from({ length: n }, () => row));
}

/**
 * `n` more tasks given back for the instant `roomAt`: the bucket's herd grows when it waits for
 * the same instant, else starts again with them. Returns the herd's size before them.
 */
export function joinHerd(
  db: PostgresDb,
  { rateLimitBuckets: b }: PostgresTables,
  bucket: string,
  roomAt: Date,
  n: number,
) {
  return db
    .insert(b)
    .values({ bucket, herdAt: roomAt, herdSize: n })
    .onConflictDoUpdate({
      target: b.bucket,
      set: {
        herdSize: sql`CASE WHEN ${b.herdAt} = excluded.herd_at THEN ${b.herdSize} + excluded.herd_size ELSE excluded.herd_size END`,
        herdAt: sql`excluded.herd_at`,
      },
    })
    .returning({ before: sql<number>`${b.herdSize} - ${n}` });
}

/** Counts the starts of rate-limited attempts or gives their tasks back, inside `tx` (see ExecutionStore.startRateLimited). */
export async function startRateLimitedIn(
  tx: PostgresDb,
  tables: PostgresTables,
  requests: readonly RateLimitedStart[],
): Promise<RateLimitedStartResult[]> {
  await lockBucket(tx, tables, [...new Set(requests.map((request) => request.bucket))]);
  const held = new Set(
    (await selectHeldLeases(tx, tables, requests)).map((row) => `${row.pipelineExecutionId}/${row.taskId}`),
  );
  const { rows } = await selectDatabaseTime(tx);
  const now = new Date(rows[0]!.ms);
  const isHeld = (index: number) => held.has(`${requests[index]!.pipelineExecutionId}/${requests[index]!.taskId}`);
  return runStepsAsync(rateGate(requests, isHeld, now), async (step: RateGateStep) => {
    switch (step.kind) {
      case 'count':
        await deleteExpiredStarts(tx, tables, step.bucket, now);
        return (await countStarts(tx, tables, step.bucket, step.from))[0]?.count ?? 0;
      case 'record':
        return insertStarts(tx, tables, step.bucket, now, step.windowMs, step.n);
      case 'nthStart':
        return (await selectNthStart(tx, tables, step.bucket, step.from, step.offset))[0]!.startedAt;
      case 'joinHerd':
        return (await joinHerd(tx, tables, step.bucket, step.roomAt, step.n))[0]?.before ?? 0;
      case 'giveBack':
        return deferTask(tx, tables, { ...requests[step.index]!, availableAt: step.availableAt, now });
    }
  });
}
