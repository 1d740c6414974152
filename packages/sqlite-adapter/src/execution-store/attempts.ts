import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';

/*
 * Attempt history: an attempt that did not complete is appended to its task row's
 * `attempt_history` (see StoredAttempt) by the statement that already writes how it ended (the
 * finish of a failure, the claim that takes over an expired lease, the release at shutdown),
 * so no statement is added. A completed attempt is not stored: the row itself describes it.
 */

/** The fields of one stored attempt, as SQL expressions of the statement that ends it (instants in epoch ms, as stored). */
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

/** `history` (a JSON array as text, or NULL before the first entry) with `entry` appended. */
export function appendAttempt(history: SQLWrapper, entry: AttemptEntry): SQL {
  return sql`json_insert(coalesce(${history}, '[]'), '$[#]', json_object('attempt', ${entry.attempt},
    'runnerId', ${entry.runnerId}, 'startedAt', ${entry.startedAt}, 'endedAt', ${entry.endedAt},
    'outcome', ${entry.outcome}, 'error', ${entry.error}))`;
}
