import { type CronExecutionRow, MAX_RUNS_NOTE, type ReleaseBufferedRequest } from '@orreryjs/core';
import { and, asc, eq, sql } from 'drizzle-orm';
import { inTextList } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb } from '../transaction.js';
import { activeSchedulesOf, skipBufferedRows } from './claim.js';

import { isBuffered } from './conditions.js';
/*
 * Overlap buffering (buffer_one, buffer_all): a buffered occurrence waits in the ledger until
 * the active occurrence of its schedule ends; then the first tick, on any runner, claims it
 * (the oldest first) and hands it off with its own scheduled time. From the claim on it is an
 * ordinary `claimed` row, so recovery covers a runner that dies before the handoff.
 */

/** Locks up to `limit` schedules of `workflowNames` holding a buffered row; SKIP LOCKED, so tickers split them. */
export function selectBufferingSchedules(db: PostgresDb, tables: PostgresTables, request: ReleaseBufferedRequest) {
  const { cronSchedules: s, cronExecutions: c } = tables;
  return db
    .select()
    .from(s)
    .where(
      and(
        // Raw SQL: the literal status lets the probe use the partial buffered index.
        sql`${s.id} IN (SELECT ce.schedule_id FROM ${c} ce WHERE ce.status = 'buffered')`,
        inTextList(s.workflowName, [...request.workflowNames]),
      ),
    )
    .orderBy(asc(s.id))
    .limit(request.limit)
    .for('no key update', { skipLocked: true });
}

/** The oldest buffered row of a schedule. */
export function selectOldestBuffered(db: PostgresDb, tables: PostgresTables, scheduleId: string) {
  const c = tables.cronExecutions;
  return db
    .select({ id: c.id })
    .from(c)
    .where(and(eq(c.scheduleId, scheduleId), isBuffered(tables)))
    .orderBy(asc(c.scheduledTime))
    .limit(1);
}

/** A buffered row becomes `claimed` by `runnerId` now: due at once, and recovery's from here on. */
export function claimBufferedRow(db: PostgresDb, tables: PostgresTables, id: string, request: ReleaseBufferedRequest) {
  const c = tables.cronExecutions;
  return db
    .update(c)
    .set({ status: 'claimed', claimedAt: request.now, fireAt: request.now, claimedBy: request.runnerId })
    .where(and(eq(c.id, id), isBuffered(tables)))
    .returning();
}

/** Counts a released occurrence in the schedule's runCount, disabling it when that reaches maxRuns. */
export function countReleasedRun(
  db: PostgresDb,
  tables: PostgresTables,
  scheduleId: string,
  exhausted: boolean,
  now: Date,
) {
  const s = tables.cronSchedules;
  return db
    .update(s)
    .set({
      runCount: sql`${s.runCount} + 1`,
      version: sql`${s.version} + 1`,
      updatedAt: now,
      ...(exhausted ? { enabled: false, nextRunAt: null, note: MAX_RUNS_NOTE } : {}),
    })
    .where(eq(s.id, scheduleId));
}

/** See CronStore.releaseBuffered: inside the caller's transaction `tx`. */
export async function releaseBuffered(
  tx: PostgresDb,
  tables: PostgresTables,
  request: ReleaseBufferedRequest,
): Promise<CronExecutionRow[]> {
  const schedules = await selectBufferingSchedules(tx, tables, request);
  if (schedules.length === 0) return [];
  // Read after the locks are held: a buffered row is not itself what it waits for.
  const ids = schedules.map((schedule) => schedule.id);
  const active = await activeSchedulesOf(tx, tables, ids, false);
  const released: CronExecutionRow[] = [];
  for (const schedule of schedules) {
    if (active.has(schedule.id)) continue;
    // A paused schedule runs nothing more (recovery abandons its claimed rows alike); a spent one neither.
    if (!schedule.enabled || (schedule.maxRuns !== null && schedule.runCount >= schedule.maxRuns)) {
      await skipBufferedRows(tx, tables, [schedule.id]);
      continue;
    }
    const [oldest] = await selectOldestBuffered(tx, tables, schedule.id);
    if (oldest === undefined) continue;
    const [row] = await claimBufferedRow(tx, tables, oldest.id, request);
    if (row === undefined) continue;
    released.push(row);
    // maxRuns counts the scheduler's occurrences: a buffered manual trigger is not one.
    if (row.source === 'manual') continue;
    const exhausted = schedule.maxRuns !== null && schedule.runCount + 1 >= schedule.maxRuns;
    await countReleasedRun(tx, tables, schedule.id, exhausted, request.now);
  }
  return released;
}
