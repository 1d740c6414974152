import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';

/*
 * Attempt history: an attempt that did not complete is appended to its task row's
 * `attempt_history` (see StoredAttempt) by the statement that already writes how it ended (the
 * finish of a failure, the claim that takes over an expired lease, the release at shutdown),
 * so no statement is added. A completed attempt is not stored: the row itself describes it.
 */

/** The task row's columns an entry is made of: the table's, or a raw statement's aliases. */
type AttemptColumns = Record<'attemptHistory' | 'attempt' | 'leaseOwner' | 'startedAt', SQLWrapper>;

/** A timestamp as epoch milliseconds, as StoredAttempt holds instants. */
function epochMs(instant: SQLWrapper): SQL {
  return sql`(extract(epoch FROM (${instant})::timestamptz) * 1000)::bigint`;
}

/**
 * The row's history with its current attempt appended, as ended at `endedAt` with `outcome`
 * (text) and `error` (text or NULL): the attempt of its latest claim, run by the lease's owner,
 * started when its start was recorded (else at `endedAt`: a start its outcome records).
 */
export function withEndedAttempt(
  row: AttemptColumns,
  endedAt: SQLWrapper,
  outcome: SQLWrapper,
  error: SQLWrapper,
): SQL {
  return sql`coalesce(${row.attemptHistory}, '[]'::jsonb) || jsonb_build_array(jsonb_build_object('attempt', ${row.attempt},
    'runnerId', ${row.leaseOwner}, 'startedAt', ${epochMs(sql`coalesce(${row.startedAt}, ${endedAt})`)},
    'endedAt', ${epochMs(endedAt)}, 'outcome', (${outcome})::text, 'error', (${error})::text))`;
}
