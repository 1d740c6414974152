import { TERMINAL_PIPELINE_STATUSES } from '@orreryjs/core';
import { and, inArray, lt, sql } from 'drizzle-orm';
import { bind, statusIn } from '../codec.js';
import type { SqliteTables } from '../schema.js';
import type { SqliteHandle } from '../transaction.js';

/*
 * Retention: terminal pipelines (and, by cascade, their tasks) older than the configured age are
 * deleted in batches, and rate-limit starts that no window counts any more.
 */

/**
 * A pipeline no `claimed` ledger row waits for: a cron pipeline's idempotency key is its
 * occurrence's id, and recovery of a claimed row looks its pipeline up by that key, so deleting
 * it would start the occurrence a second time. Raw SQL: the key read as the row's BLOB id.
 */
function isNotAwaitedByRecovery({ pipelineExecutions: p, cronExecutions: c }: SqliteTables) {
  return sql`(${p.scheduledTime} IS NULL OR NOT EXISTS (SELECT 1 FROM ${c} ce
  WHERE ce.id = unhex(replace(${p.idempotencyKey}, '-', '')) AND ce.status = 'claimed'))`;
}

/** Prepares the retention statements once on the connection. */
export function prepareRetention({ db, tables }: SqliteHandle) {
  const { pipelineExecutions: p, rateLimitStarts: r } = tables;
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
              and(
                statusIn(p.status, TERMINAL_PIPELINE_STATUSES),
                lt(p.completedAt, bind(p.completedAt, 'before')),
                isNotAwaitedByRecovery(tables),
              ),
            )
            .limit(sql.placeholder('batchSize')),
        ),
      )
      .prepare(),
    // Rate-limit starts no window counts any more, of buckets no attempt has counted in since (see buckets.ts).
    deleteExpiredRateLimitStarts: db
      .delete(r)
      .where(
        sql`rowid IN (SELECT rowid FROM ${r} WHERE ${r.expiresAt} < ${bind(r.expiresAt, 'before')} LIMIT ${sql.placeholder('batchSize')})`,
      )
      .prepare(),
  };
}

export type RetentionStatements = ReturnType<typeof prepareRetention>;
