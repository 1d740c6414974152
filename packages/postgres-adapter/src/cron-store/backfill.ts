import {
  type CronExecutionRow,
  type NewCronExecution,
  newCronExecutionRow,
  RECLAIMABLE_OCCURRENCE_STATUSES,
} from '@orreryjs/core';
import { and, isNull, sql } from 'drizzle-orm';
import { arrayParam, dateToIso, encodeJson, encodeUuidList, statusIn } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb } from '../transaction.js';
import { insertOccurrenceRows } from './ledger.js';

/*
 * Manual triggers and backfill: occurrences written outside the tick. A backfill may take back
 * a slot that was missed or abandoned without a pipeline; any other taken slot is left alone.
 */

/** `(schedule, scheduled time)`: the slot a non-manual ledger row holds. */
function slotKey(row: { scheduleId: string; scheduledTime: Date }): string {
  return `${row.scheduleId}@${row.scheduledTime.getTime()}`;
}

/**
 * Pairs input rows with the rows an insert returned: a returned row belongs to the first input
 * row with its id (Postgres inserts a multi-row VALUES in order, and DO NOTHING skips later
 * duplicates). Undefined where the input row was not inserted.
 */
function matchInserted(rows: readonly NewCronExecution[], inserted: readonly CronExecutionRow[]) {
  const byId = new Map(inserted.map((row) => [row.id, row]));
  return rows.map((row) => {
    const match = byId.get(row.id);
    byId.delete(row.id);
    return match;
  });
}

/**
 * Reclaims missed or abandoned slots without a pipeline as `claimed`/`backfill` rows, one
 * statement for every slot (rows given as parallel arrays).
 */
export function reclaimForBackfill(db: PostgresDb, tables: PostgresTables, rows: readonly NewCronExecution[]) {
  const c = tables.cronExecutions;
  // Raw SQL: rows from parallel arrays (unnest), which drizzle's builder cannot name as an UPDATE source.
  const source = sql`unnest(${arrayParam(encodeUuidList(rows.map((row) => row.scheduleId)))}::uuid[],
      ${arrayParam(rows.map((row) => dateToIso(row.scheduledTime)))}::timestamptz[],
      ${arrayParam(rows.map((row) => dateToIso(row.claimedAt)))}::timestamptz[], ${arrayParam(rows.map((row) => row.claimedBy))}::text[],
      ${arrayParam(rows.map((row) => dateToIso(row.fireAt)))}::timestamptz[], ${arrayParam(rows.map((row) => row.workflowName))}::text[],
      ${arrayParam(rows.map((row) => encodeJson(row.context)))}::text[])
    AS v(schedule_id, scheduled_time, claimed_at, claimed_by, fire_at, workflow_name, context)`;
  return db
    .update(c)
    .set({
      status: 'claimed',
      source: 'backfill',
      claimedAt: sql`v.claimed_at`,
      claimedBy: sql`v.claimed_by`,
      fireAt: sql`v.fire_at`,
      missedCount: 1,
      // A fresh request: the attempts an earlier recovery used up do not count against it.
      recoveryAttempts: 0,
      workflowName: sql`v.workflow_name`,
      context: sql`v.context::jsonb`,
      nextRecoveryAt: null,
      abandonReason: null,
      recoveryLeaseOwner: null,
      recoveryLeaseExpiresAt: null,
    })
    .from(source)
    .where(
      and(
        sql`${c.scheduleId} = v.schedule_id`,
        sql`${c.scheduledTime} = v.scheduled_time`,
        statusIn(c.status, RECLAIMABLE_OCCURRENCE_STATUSES),
        isNull(c.pipelineExecutionId),
        sql`${c.source} <> 'manual'`,
      ),
    )
    .returning();
}

/**
 * Inserts manual and backfill rows ON CONFLICT DO NOTHING inside `tx`; the first backfill row
 * of each taken slot may reclaim it. Returns the rows to hand off and how many slots were taken.
 */
export async function insertOccurrences(
  tx: PostgresDb,
  tables: PostgresTables,
  rows: readonly NewCronExecution[],
): Promise<{ claimed: CronExecutionRow[]; existing: number }> {
  const inserted = matchInserted(rows, await insertOccurrenceRows(tx, tables, rows.map(newCronExecutionRow)));
  // The first backfill row of each slot that found it taken may reclaim it; later ones find it claimed.
  const reclaimable = new Map<string, NewCronExecution>();
  rows.forEach((row, i) => {
    if (inserted[i] === undefined && row.source === 'backfill' && !reclaimable.has(slotKey(row))) {
      reclaimable.set(slotKey(row), row);
    }
  });
  const reclaimed = reclaimable.size === 0 ? [] : await reclaimForBackfill(tx, tables, [...reclaimable.values()]);
  const bySlot = new Map(reclaimed.map((row) => [slotKey(row), row]));
  const claimed: CronExecutionRow[] = [];
  let existing = 0;
  rows.forEach((row, i) => {
    let stored = inserted[i];
    if (stored === undefined && reclaimable.get(slotKey(row)) === row) stored = bySlot.get(slotKey(row));
    if (stored === undefined) existing += 1;
    else if (stored.status === 'claimed') claimed.push(stored);
  });
  return { claimed, existing };
}
