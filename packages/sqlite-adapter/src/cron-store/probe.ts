import { and, asc, lte, sql } from 'drizzle-orm';
import { bind, textListSql } from '../codec.js';
import type { SqliteHandle } from '../transaction.js';
import { isBuffered, isEnabled } from './conditions.js';

/*
 * A tick's probe: one read before any write lock, since most ticks find nothing to claim and
 * nothing buffered, and an idle tick is then this one statement.
 */

/**
 * Prepares the probe once on the connection. Its two subqueries are each the first row of a
 * partial index: the due index up to `until` (as the claim's own walk) and the buffered index.
 */
export function prepareProbe({ db, tables }: SqliteHandle) {
  const { cronSchedules: s, cronExecutions: c } = tables;
  const earliestRun = db
    .select({ nextRunAt: s.nextRunAt })
    .from(s)
    .where(
      and(
        isEnabled(tables),
        lte(s.nextRunAt, bind(s.nextRunAt, 'until')),
        sql`${s.workflowName} IN ${textListSql(sql.placeholder('workflows'))}`,
      ),
    )
    .orderBy(asc(s.nextRunAt))
    .limit(1);
  const anyBuffered = db.select({ id: c.id }).from(c).where(isBuffered(tables)).limit(1);
  return {
    selectTickProbe: db
      .select({
        earliestRunAt: sql<Date | null>`${earliestRun}`.mapWith(s.nextRunAt),
        anyBuffered: sql<boolean>`EXISTS ${anyBuffered}`.mapWith(Boolean),
      })
      // drizzle builds no select without a FROM: a one-row VALUES stands for none.
      .from(sql`(VALUES (1)) AS probe`)
      .prepare(),
  };
}
