import {
  type CronExecutionRow,
  type NewCronExecution,
  newCronExecutionRow,
  RECLAIMABLE_OCCURRENCE_STATUSES,
} from '@orreryjs/core';
import { and, eq, isNull, sql } from 'drizzle-orm';
import { bind, statusIn } from '../codec.js';
import type { SqliteHandle } from '../transaction.js';
import { insertOccurrenceRow, type LedgerStatements } from './ledger.js';

/*
 * Manual triggers and backfill: occurrences written outside the tick. A backfill may take back
 * a slot that was missed or abandoned without a pipeline; any other taken slot is left alone.
 */

/** Prepares the backfill statements once on the connection. */
export function prepareBackfill({ db, tables }: SqliteHandle) {
  const c = tables.cronExecutions;
  return {
    // Reclaims a missed or abandoned slot without a pipeline as a `claimed`/`backfill` row.
    reclaimForBackfill: db
      .update(c)
      .set({
        status: 'claimed',
        source: 'backfill',
        claimedAt: bind(c.claimedAt, 'claimedAt'),
        claimedBy: bind(c.claimedBy, 'claimedBy'),
        fireAt: bind(c.fireAt, 'fireAt'),
        missedCount: 1,
        // A fresh request: the attempts an earlier recovery used up do not count against it.
        recoveryAttempts: 0,
        workflowName: bind(c.workflowName, 'workflowName'),
        context: bind(c.context, 'context'),
        nextRecoveryAt: null,
        abandonReason: null,
        recoveryLeaseOwner: null,
        recoveryLeaseExpiresAt: null,
      })
      .where(
        and(
          eq(c.scheduleId, bind(c.scheduleId, 'scheduleId')),
          eq(c.scheduledTime, bind(c.scheduledTime, 'scheduledTime')),
          statusIn(c.status, RECLAIMABLE_OCCURRENCE_STATUSES),
          isNull(c.pipelineExecutionId),
          sql`${c.source} <> 'manual'`,
        ),
      )
      .returning()
      .prepare(),
  };
}

export type BackfillStatements = ReturnType<typeof prepareBackfill>;

/**
 * Inserts manual and backfill rows ON CONFLICT DO NOTHING inside the caller's write
 * transaction; a backfill row whose slot is taken may reclaim it. Returns the rows to hand off
 * and how many slots were taken.
 */
export function insertOccurrences(
  q: { backfill: BackfillStatements; ledger: LedgerStatements },
  rows: readonly NewCronExecution[],
): { claimed: CronExecutionRow[]; existing: number } {
  const claimed: CronExecutionRow[] = [];
  let existing = 0;
  for (const row of rows) {
    const stored =
      insertOccurrenceRow(q.ledger, newCronExecutionRow(row)) ??
      (row.source === 'backfill' ? q.backfill.reclaimForBackfill.get({ ...row }) : undefined);
    if (stored === undefined) existing += 1;
    else if (stored.status === 'claimed') claimed.push(stored);
  }
  return { claimed, existing };
}
