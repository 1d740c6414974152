import {
  type CronExecutionRow,
  FIRE_LAG_SOURCES,
  type OccurrenceStats,
  OPEN_OCCURRENCE_STATUSES,
  UNFINISHED_PIPELINE_STATUSES,
} from '@orreryjs/core';
import { and, desc, eq, gte, inArray, lt, sql } from 'drizzle-orm';
import { bind, statusIn, statusNotIn, unnestedRows } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb, PostgresHandle } from '../transaction.js';
import { isClaimed, isLost } from './conditions.js';

/*
 * The ledger: one row per occurrence, written once per slot (ON CONFLICT DO NOTHING on the
 * occurrence key), read by id and by schedule, counted for stats, and swept by retention.
 */

/** Rows per INSERT (one array parameter per column): bounds the size of one statement's parameters. */
const INSERT_CHUNK = 10_000;

/**
 * Not a `handed_off` row whose pipeline is still pending, running or paused: the overlap check
 * reads those rows, so retention keeps them however old their slot is (a fresh backfill of old
 * slots). Raw SQL: a probe of the pipeline table, which the cron schema does not reference.
 */
function isNotOverlapping({ cronExecutions: c, pipelineExecutions: p }: PostgresTables) {
  return sql`NOT EXISTS (SELECT 1 FROM ${p} pe
  WHERE pe.id = ${c.pipelineExecutionId} AND ${statusIn(sql`pe.status`, UNFINISHED_PIPELINE_STATUSES)})`;
}

/** A handoff delay in milliseconds (numeric, exact to the microsecond). */
function delayMs({ cronExecutions: c }: PostgresTables) {
  return sql`extract(epoch FROM ${c.handedOffAt} - ${c.scheduledTime}) * 1000`;
}

/** `handed_off` rows whose hand-off has a lateness (a scheduler's, not a backfill or a manual trigger). */
function hasFireLag({ cronExecutions: c }: PostgresTables) {
  return sql`${c.status} = 'handed_off' AND ${statusIn(c.source, FIRE_LAG_SOURCES)}`;
}

/** Builds the ledger statements once; each is named, so each connection parses it once. */
export function prepareLedger({ db, tables, named }: PostgresHandle) {
  const c = tables.cronExecutions;
  const DELAY_MS = delayMs(tables);
  return {
    selectOccurrence: db
      .select()
      .from(c)
      .where(eq(c.id, bind(c.id, 'id')))
      .prepare(named('orrery_select_occurrence')),
    selectOccurrencesOfSchedule: db
      .select()
      .from(c)
      .where(eq(c.scheduleId, bind(c.scheduleId, 'scheduleId')))
      .orderBy(desc(c.scheduledTime), desc(c.claimedAt))
      .limit(sql.placeholder('limit'))
      .offset(sql.placeholder('offset'))
      .prepare(named('orrery_list_occurrences')),
    countAbandonedOccurrences: db
      .select({ count: sql<number>`count(*)::int` })
      .from(c)
      .where(sql`${c.status} = 'abandoned'`)
      .prepare(named('orrery_count_abandoned_occurrences')),
    countLostOccurrences: db
      .select({ count: sql<number>`count(*)::int` })
      .from(c)
      .where(and(isClaimed(tables), isLost(tables)))
      .prepare(named('orrery_count_lost_occurrences')),
    selectOccurrenceStats: db
      .select({
        total: sql<number>`count(*)::int`,
        handedOff: sql<number>`(count(*) FILTER (WHERE ${c.status} = 'handed_off'))::int`,
        lost: sql<number>`(count(*) FILTER (WHERE ${isClaimed(tables)} AND ${isLost(tables)}))::int`,
        skipped: sql<number>`(count(*) FILTER (WHERE ${c.status} = 'skipped'))::int`,
        missed: sql<number>`(count(*) FILTER (WHERE ${c.status} = 'missed'))::int`,
        abandoned: sql<number>`(count(*) FILTER (WHERE ${c.status} = 'abandoned'))::int`,
        meanDelayMs: sql<number | null>`avg(${DELAY_MS}) FILTER (WHERE ${hasFireLag(tables)})`.mapWith(Number),
        // percentile_disc(0.99): the first delay whose cumulative share reaches 99%, i.e. rank ceil(0.99 n) of n.
        p99DelayMs: sql<
          number | null
        >`percentile_disc(0.99) WITHIN GROUP (ORDER BY ${DELAY_MS}) FILTER (WHERE ${hasFireLag(tables)})`.mapWith(
          Number,
        ),
      })
      .from(c)
      .where(gte(c.scheduledTime, bind(c.scheduledTime, 'since')))
      .prepare(named('orrery_occurrence_stats')),
    selectRecoveryCounts: db
      .select({
        totalRecoveryAttempts: sql<number>`coalesce(sum(${c.recoveryAttempts}), 0)`.mapWith(Number),
        successfulRecoveries: sql<number>`count(*) FILTER (WHERE ${c.recovered})`.mapWith(Number),
        abandonedRecoveries:
          sql<number>`count(*) FILTER (WHERE ${c.status} = 'abandoned' AND ${c.recoveryAttempts} > 0)`.mapWith(Number),
      })
      .from(c)
      .prepare(named('orrery_recovery_counts')),
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
            .limit(sql.placeholder('batchSize'))
            .for('update', { skipLocked: true }),
        ),
      )
      .prepare(named('orrery_delete_terminal_occurrences')),
  };
}

export type LedgerStatements = ReturnType<typeof prepareLedger>;

/**
 * Inserts up to {@link INSERT_CHUNK} ledger rows ON CONFLICT DO NOTHING, returning the ids of
 * those inserted. Raw SQL source: the rows are the `unnest` of one array parameter per column
 * (a column every row shares is one parameter), which drizzle's builder cannot name as an
 * INSERT source; the rows themselves are what the caller holds, so only ids come back.
 */
export function insertOccurrenceChunk(db: PostgresDb, tables: PostgresTables, rows: readonly CronExecutionRow[]) {
  const c = tables.cronExecutions;
  return db.insert(c).select(unnestedRows(c, rows)).onConflictDoNothing().returning({ id: c.id });
}

/**
 * Inserts ledger rows ON CONFLICT DO NOTHING, a chunk per statement; returns the rows inserted
 * (a slot or id already taken inserts nothing), in input order. New rows come from
 * core's `newCronExecutionRow`; the claim's in-transaction handoff writes its rows `handed_off`.
 */
export async function insertOccurrenceRows(
  db: PostgresDb,
  tables: PostgresTables,
  rows: readonly CronExecutionRow[],
): Promise<CronExecutionRow[]> {
  const inserted = new Set<string>();
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
    for (const { id } of await insertOccurrenceChunk(db, tables, rows.slice(start, start + INSERT_CHUNK))) {
      inserted.add(id);
    }
  }
  // Deleted as matched: a repeated id stands for one row.
  return rows.filter((row) => inserted.delete(row.id));
}

/** Ledger counts for rows scheduled at or after `since`; the delays count only hand-offs with a fire lag. */
export async function occurrenceStats(q: LedgerStatements, since: Date, lostBefore: Date): Promise<OccurrenceStats> {
  const [stats] = await q.selectOccurrenceStats.execute({ since, lostBefore });
  return { ...stats!, meanDelayMs: stats!.meanDelayMs ?? null, p99DelayMs: stats!.p99DelayMs ?? null };
}
