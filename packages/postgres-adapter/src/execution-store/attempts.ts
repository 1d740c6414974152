import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';

/*
 * Attempt history: an attempt that did not complete is appended to its task row's
 * `attempt_history` (see StoredAttempt) by the statement that already writes how it ended (the
 * finish of a failure, the claim that takes over an expired lease, the release at shutdown),
 * so no statement is added. A completed attempt is not stored: the row itself describes it.
 */

/** The fields of one stored attempt, as SQL expressions of the statement that ends it. */
export interface AttemptEntry {
  attempt: SQLWrapper;
  runnerId: SQLWrapper;
  startedAt: SQLWrapper;
  endedAt: SQLWrapper;
  /** A text literal or a placeholder: one of StoredAttempt's outcomes. */
  outcome: SQLWrapper;
  /** Text, or NULL. */
  error: SQLWrapper;
}

/** A timestamp as epoch milliseconds, as StoredAttempt holds instants. */
function epochMs(instant: SQLWrapper): SQL {
  return sql`(extract(epoch FROM (${instant})::timestamptz) * 1000)::bigint`;
}

/** `history` (a jsonb array, or NULL before the first entry) with `entry` appended. */
export function appendAttempt(history: SQLWrapper, entry: AttemptEntry): SQL {
  return sql`coalesce(${history}, '[]'::jsonb) || jsonb_build_array(jsonb_build_object('attempt', (${entry.attempt})::int,
    'runnerId', (${entry.runnerId})::text, 'startedAt', ${epochMs(entry.startedAt)}, 'endedAt', ${epochMs(entry.endedAt)},
    'outcome', (${entry.outcome})::text, 'error', (${entry.error})::text))`;
}
