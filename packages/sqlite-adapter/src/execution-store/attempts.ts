import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';

/*
 * Attempt history: an attempt that did not complete is appended to its task row's
 * `attempt_history` (see StoredAttempt) by the statement that already writes how it ended (the
 * finish of a failure, the claim that takes over an expired lease, the release at shutdown),
 * so no statement is added. A completed attempt is not stored: the row itself describes it.
 */

/** The task row's columns an entry is made of. */
type AttemptColumns = Record<'attemptHistory' | 'attempt' | 'leaseOwner' | 'startedAt', SQLWrapper>;

/**
 * The row's history (JSON text) with its current attempt appended, as ended at `endedAt` with
 * `outcome` and `error` (or NULL): the attempt of its latest claim, run by the lease's owner,
 * started when its start was recorded (else at `endedAt`: a start its outcome records).
 * Instants are the columns' epoch milliseconds, as StoredAttempt holds them.
 */
export function withEndedAttempt(
  row: AttemptColumns,
  endedAt: SQLWrapper,
  outcome: SQLWrapper,
  error: SQLWrapper,
): SQL {
  return sql`json_insert(coalesce(${row.attemptHistory}, '[]'), '$[#]', json_object('attempt', ${row.attempt},
    'runnerId', ${row.leaseOwner}, 'startedAt', coalesce(${row.startedAt}, ${endedAt}), 'endedAt', ${endedAt},
    'outcome', ${outcome}, 'error', ${error}))`;
}
