import {
  type CronExecutionRow,
  FIRE_LAG_SOURCES,
  type OccurrenceStats,
  OPEN_OCCURRENCE_STATUSES,
  UNFINISHED_PIPELINE_STATUSES,
} from '@orreryjs/core';
import { and, desc, eq, gte, inArray, lt, sql } from 'drizzle-orm';
import { bind, bindAllColumns, statusIn, statusNotIn } from '../codec.js';
import type { SqliteTables } from '../schema.js';
import type { SqliteHandle } from '../transaction.js';
import { isClaimed, isLost } from './conditions.js';

/*
 * The ledger: one row per occurrence, written once per slot (ON CONFLICT DO NOTHING on the
 * occurrence key), read by id and by schedule, counted for stats, and swept by retention.
 */

/**
 * Not a `handed_off` row whose pipeline is still pending, running or paused: the overlap check
 * reads those rows, so retention keeps them however old their slot is (a fresh backfill of old
 * slots). Raw SQL: a probe of the pipeline table, which the cron schema does not reference.
 */
function isNotOverlapping({ cronExecutions: c, pipelineExecutions: p }: SqliteTables) {
  return sql`NOT EXISTS (SELECT 1 FROM ${p} pe
  WHERE pe.id = ${c.pipelineExecutionId} AND ${statusIn(sql`pe.status`, UNFINISHED_PIPELINE_STATUSES)})`;
}

/** `handed_off` rows whose hand-off has a lateness (a scheduler's, not a backfill or a manual trigger). */
function hasFireLag({ cronExecutions: c }: SqliteTables) {
  return sql`${c.status} = 'handed_off' AND ${statusIn(c.source, FIRE_LAG_SOURCES)}`;
}

/** Prepares the ledger statements once on the connection. */
export function prepareLedger({ db, tables }: SqliteHandle) {
  const c = tables.cronExecutions;
  const placeholder = sql.placeholder;
  return {
    // Differs by necessity: prepared once with a fixed shape, so a chunk is one row per statement.
    insertOccurrenceChunk: db.insert(c).values(bindAllColumns(c)).onConflictDoNothing().prepare(),
    selectOccurrence: db
      .select()
      .from(c)
      .where(eq(c.id, bind(c.id, 'id')))
      .prepare(),
    selectOccurrencesOfSchedule: db
      .select()
      .from(c)
      .where(eq(c.scheduleId, bind(c.scheduleId, 'scheduleId')))
      .orderBy(desc(c.scheduledTime), desc(c.claimedAt))
      .limit(placeholder('limit'))
      .offset(placeholder('offset'))
      .prepare(),
    countAbandonedOccurrences: db
      .select({ count: sql<number>`count(*)` })
      .from(c)
      .where(sql`${c.status} = 'abandoned'`)
      .prepare(),
    countLostOccurrences: db
      .select({ count: sql<number>`count(*)` })
      .from(c)
      .where(and(isClaimed(tables), isLost(tables)))
      .prepare(),
    // Differs by necessity: no percentile_disc, so the p99 is the delay at its rank, a second read.
    selectOccurrenceStats: [
      db
        .select({
          total: sql<number>`count(*)`,
          handedOff: sql<number>`coalesce(sum(${c.status} = 'handed_off'), 0)`,
          lost: sql<number>`coalesce(sum(${isClaimed(tables)} AND ${isLost(tables)}), 0)`,
          skipped: sql<number>`coalesce(sum(${c.status} = 'skipped'), 0)`,
          missed: sql<number>`coalesce(sum(${c.status} = 'missed'), 0)`,
          abandoned: sql<number>`coalesce(sum(${c.status} = 'abandoned'), 0)`,
          lagged: sql<number>`coalesce(sum(${hasFireLag(tables)}), 0)`,
          meanDelayMs: sql<
            number | null
          >`avg(CASE WHEN ${hasFireLag(tables)} THEN ${c.handedOffAt} - ${c.scheduledTime} END)`,
        })
        .from(c)
        .where(gte(c.scheduledTime, bind(c.scheduledTime, 'since')))
        .prepare(),
      // Portable percentile: the delay at a given rank, by ORDER BY ... LIMIT 1 OFFSET rank.
      db
        .select({ delayMs: sql<number>`${c.handedOffAt} - ${c.scheduledTime}` })
        .from(c)
        .where(and(gte(c.scheduledTime, bind(c.scheduledTime, 'since')), hasFireLag(tables)))
        .orderBy(sql`${c.handedOffAt} - ${c.scheduledTime}`)
        .limit(1)
        .offset(placeholder('rank'))
        .prepare(),
    ] as const,
    selectRecoveryCounts: db
      .select({
        totalRecoveryAttempts: sql<number>`coalesce(sum(${c.recoveryAttempts}), 0)`,
        successfulRecoveries: sql<number>`coalesce(sum(${c.recovered}), 0)`,
        abandonedRecoveries: sql<number>`coalesce(sum(${c.status} = 'abandoned' AND ${c.recoveryAttempts} > 0), 0)`,
      })
      .from(c)
      .prepare(),
    deleteTerminalOccurrences: db
      .delete(c)
      .where(
        inArray(
          c.id,
          db
            .select({ id: c.id })
            .from(c)
            .where(
              and(
                statusNotIn(c.status, OPEN_OCCURRENCE_STATUSES),
                lt(sql`coalesce(${c.handedOffAt}, ${c.claimedAt})`, bind(c.claimedAt, 'before')),
                isNotOverlapping(tables),
              ),
            )
            .limit(placeholder('batchSize')),
        ),
      )
      .prepare(),
  };
}

export type LedgerStatements = ReturnType<typeof prepareLedger>;

/**
 * Inserts one ledger row ON CONFLICT DO NOTHING; returns it as stored, or undefined when its
 * slot or id already had a row. New rows come from core's `newCronExecutionRow`.
 */
export function insertOccurrenceRow(q: LedgerStatements, row: CronExecutionRow): CronExecutionRow | undefined {
  return q.insertOccurrenceChunk.run({ ...row }).changes > 0 ? row : undefined;
}

/**
 * Inserts ledger rows ON CONFLICT DO NOTHING, one prepared statement per row; returns the rows
 * inserted, in input order. The claim's in-transaction handoff writes its rows `handed_off`.
 */
export function insertOccurrenceRows(q: LedgerStatements, rows: readonly CronExecutionRow[]): CronExecutionRow[] {
  const inserted: CronExecutionRow[] = [];
  for (const row of rows) {
    const stored = insertOccurrenceRow(q, row);
    if (stored !== undefined) inserted.push(stored);
  }
  return inserted;
}

/** Ledger counts for rows scheduled at or after `since`; the delays count only hand-offs with a fire lag. */
export function occurrenceStats(q: LedgerStatements, since: Date, lostBefore: Date): OccurrenceStats {
  const [selectCounts, selectDelayAtRank] = q.selectOccurrenceStats;
  const { lagged, ...counts } = selectCounts.get({ since, lostBefore })!;
  // p99 = the delay at index ceil(0.99 n) - 1 of the n fire lags sorted ascending.
  const rank = Math.ceil(0.99 * lagged) - 1;
  const p99 = rank < 0 ? undefined : selectDelayAtRank.get({ since, rank });
  return { ...counts, p99DelayMs: p99?.delayMs ?? null };
}
