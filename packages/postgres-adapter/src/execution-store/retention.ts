import { TERMINAL_PIPELINE_STATUSES } from '@orreryjs/core';
import { and, inArray, lt, sql } from 'drizzle-orm';
import { bind, statusIn } from '../codec.js';
import type { PostgresHandle } from '../transaction.js';

/*
 * Retention: terminal pipelines (and, by cascade, their tasks) older than the configured age are
 * deleted in batches.
 */

/** Builds the retention statements once; each is named, so each connection parses it once. */
export function prepareRetention({ db, tables, named }: PostgresHandle) {
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
            .limit(sql.placeholder('batchSize'))
            // Concurrent sweeps split the work instead of waiting on each other's rows.
            .for('update', { skipLocked: true }),
        ),
      )
      .prepare(named('orrery_delete_terminal_pipelines')),
  };
}

export type RetentionStatements = ReturnType<typeof prepareRetention>;
