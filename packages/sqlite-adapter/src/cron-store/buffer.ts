import { type CronExecutionRow, MAX_RUNS_NOTE, type ReleaseBufferedRequest } from '@orreryjs/core';
import { and, asc, eq, sql } from 'drizzle-orm';
import { bind, encodeTextList, textListSql } from '../codec.js';
import type { SqliteHandle } from '../transaction.js';
import { activeSchedulesOf, type ClaimStatements } from './claim.js';

import { isBuffered } from './conditions.js';
/*
 * Overlap buffering (buffer_one, buffer_all): a buffered occurrence waits in the ledger until
 * the active occurrence of its schedule ends; then the first tick, on any runner, claims it
 * (the oldest first) and hands it off with its own scheduled time. From the claim on it is an
 * ordinary `claimed` row, so recovery covers a runner that dies before the handoff.
 */

/** Prepares the buffering statements once on the connection. */
export function prepareBuffer({ db, tables }: SqliteHandle) {
  const { cronSchedules: s, cronExecutions: c } = tables;
  const placeholder = sql.placeholder;
  return {
    selectBufferingSchedules: db
      .select()
      .from(s)
      .where(
        and(
          // The literal status lets the probe use the partial buffered index.
          sql`${s.id} IN (SELECT ce.schedule_id FROM ${c} ce WHERE ce.status = 'buffered')`,
          sql`${s.workflowName} IN ${textListSql(placeholder('workflows'))}`,
        ),
      )
      .orderBy(asc(s.id))
      .limit(placeholder('limit'))
      .prepare(),
    selectOldestBuffered: db
      .select({ id: c.id })
      .from(c)
      .where(and(eq(c.scheduleId, bind(c.scheduleId, 'scheduleId')), isBuffered(tables)))
      .orderBy(asc(c.scheduledTime))
      .limit(1)
      .prepare(),
    claimBufferedRow: db
      .update(c)
      .set({
        status: 'claimed',
        claimedAt: bind(c.claimedAt, 'now'),
        fireAt: bind(c.fireAt, 'now'),
        claimedBy: bind(c.claimedBy, 'runnerId'),
      })
      .where(and(eq(c.id, bind(c.id, 'id')), isBuffered(tables)))
      .returning()
      .prepare(),
    // Differs by necessity: the disabling update apart, so that each statement is prepared once.
    countReleasedRun: [
      db
        .update(s)
        .set({
          runCount: sql`${s.runCount} + 1`,
          version: sql`${s.version} + 1`,
          updatedAt: bind(s.updatedAt, 'now'),
        })
        .where(eq(s.id, bind(s.id, 'scheduleId')))
        .prepare(),
      db
        .update(s)
        .set({ enabled: false, nextRunAt: null, note: MAX_RUNS_NOTE })
        .where(eq(s.id, bind(s.id, 'scheduleId')))
        .prepare(),
    ] as const,
  };
}

export type BufferStatements = ReturnType<typeof prepareBuffer>;

/** See CronStore.releaseBuffered: inside the caller's write transaction. */
export function releaseBuffered(
  q: { buffer: BufferStatements; claim: ClaimStatements },
  request: ReleaseBufferedRequest,
): CronExecutionRow[] {
  const schedules = q.buffer.selectBufferingSchedules.all({
    workflows: encodeTextList(request.workflowNames),
    limit: request.limit,
  });
  const [countRun, disableExhausted] = q.buffer.countReleasedRun;
  // A buffered row is not itself what it waits for: only a claimed row or an unfinished pipeline.
  const active = activeSchedulesOf(
    q.claim,
    schedules.map((schedule) => schedule.id),
    false,
  );
  const released: CronExecutionRow[] = [];
  for (const schedule of schedules) {
    if (active.has(schedule.id)) continue;
    // A paused schedule runs nothing more (recovery abandons its claimed rows alike); a spent one neither.
    if (!schedule.enabled || (schedule.maxRuns !== null && schedule.runCount >= schedule.maxRuns)) {
      q.claim.skipBufferedRows.run({ scheduleId: schedule.id });
      continue;
    }
    const oldest = q.buffer.selectOldestBuffered.get({ scheduleId: schedule.id });
    if (oldest === undefined) continue;
    const row = q.buffer.claimBufferedRow.get({ id: oldest.id, now: request.now, runnerId: request.runnerId });
    if (row === undefined) continue;
    released.push(row);
    // maxRuns counts the scheduler's occurrences: a buffered manual trigger is not one.
    if (row.source === 'manual') continue;
    countRun.run({ scheduleId: schedule.id, now: request.now });
    if (schedule.maxRuns !== null && schedule.runCount + 1 >= schedule.maxRuns) {
      disableExhausted.run({ scheduleId: schedule.id });
    }
  }
  return released;
}
