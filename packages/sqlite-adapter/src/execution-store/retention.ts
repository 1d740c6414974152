import { TERMINAL_PIPELINE_STATUSES } from '@orreryjs/core';
import { and, inArray, lt, sql } from 'drizzle-orm';
import { bind, statusIn } from '../codec.js';
import type { SqliteHandle } from '../transaction.js';

/*
 * Retention: terminal pipelines (and, by cascade, their tasks) older than the configured age are
 * deleted in batches.
 */

/** Prepares the retention statements once on the connection. */
export function prepareRetention({ db, tables }: SqliteHandle) {
  const p = tables.pipelineExecutions;
  return {
    deleteTerminalPipelines: db
      .delete(p)
      .where(
        inArray(
          p.id,
          db
            .select({ id: p.id })
            .from(p)
            .where(
              and(statusIn(p.status, TERMINAL_PIPELINE_STATUSES), lt(p.completedAt, bind(p.completedAt, 'before'))),
            )
            .limit(sql.placeholder('batchSize')),
        ),
      )
      .prepare(),
  };
}

export type RetentionStatements = ReturnType<typeof prepareRetention>;
