import {
  type DueScheduleState,
  type ManualOccurrenceRequest,
  type ManualOccurrenceResult,
  newCronExecutionRow,
} from '@orreryjs/core';
import { eq } from 'drizzle-orm';
import { cancelPipeline } from '../execution-store/control.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb } from '../transaction.js';
import { activePipelinesOf, activeSchedulesOf, skipBufferedRows, skipReplacedClaims } from './claim.js';
import { insertOccurrenceRows } from './ledger.js';

/*
 * Manual triggers under the overlap policy: like phase 1 of a tick, the decision and the
 * ledger row commit together under the schedule's row lock, so a trigger and a tick (or two
 * triggers) take turns and the second sees the first's row as active.
 */

/** Locks one schedule's row, waiting for a tick or trigger that holds it (a tick skips it meanwhile). */
export function lockSchedule(db: PostgresDb, tables: PostgresTables, scheduleId: string) {
  const s = tables.cronSchedules;
  return db.select().from(s).where(eq(s.id, scheduleId)).for('no key update');
}

/** See CronStore.insertManualOccurrence: inside the caller's transaction `tx`. */
export async function insertManualOccurrence(
  tx: PostgresDb,
  tables: PostgresTables,
  request: ManualOccurrenceRequest,
): Promise<ManualOccurrenceResult | null> {
  const scheduleId = request.row.scheduleId;
  const [schedule] = await lockSchedule(tx, tables, scheduleId);
  if (schedule === undefined) return null;
  // Read after the lock is held, on a snapshot that sees every claim committed before it.
  const active = (await activeSchedulesOf(tx, tables, [scheduleId])).has(scheduleId);
  const state: DueScheduleState = active
    ? {
        hasActiveOccurrence: true,
        activePipelineIds: (await activePipelinesOf(tx, tables, [scheduleId])).get(scheduleId) ?? [],
      }
    : { hasActiveOccurrence: false };
  const plan = request.plan(schedule, state);
  if (plan.skipBuffered === true) await skipBufferedRows(tx, tables, [scheduleId]);
  if (plan.skipClaimed === true) await skipReplacedClaims(tx, tables, [scheduleId], request.row.claimedAt);
  for (const id of plan.cancelPipelineIds ?? []) await cancelPipeline(tx, tables, id, request.row.claimedAt);
  // A manual row has a random id: it never meets ON CONFLICT.
  const [row] = await insertOccurrenceRows(tx, tables, [newCronExecutionRow({ ...request.row, status: plan.status })]);
  return { row: row!, state };
}
