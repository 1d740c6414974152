import { TERMINAL_PIPELINE_STATUSES } from '@orreryjs/core';
import { and, inArray, lt, sql } from 'drizzle-orm';
import { bind, statusIn } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresHandle } from '../transaction.js';

/*
 * Retention: terminal pipelines (and, by cascade, their tasks) older than the configured age are
 * deleted in batches, and rate-limit starts that no window counts any more.
 */

/**
 * A pipeline no `claimed` ledger row waits for: a cron pipeline's idempotency key is its
 * occurrence's id, and recovery of a claimed row looks its pipeline up by that key, so deleting
 * it would start the occurrence a second time. Raw SQL: a key cast guarded so that a key that
 * is not a UUID cannot fail it.
 */
function isNotAwaitedByRecovery({ pipelineExecutions: p, cronExecutions: c }: PostgresTables) {
  return sql`(${p.scheduledTime} IS NULL OR NOT EXISTS (SELECT 1 FROM ${c} ce
  WHERE ce.status = 'claimed' AND ce.id = (CASE WHEN ${p.idempotencyKey}
    ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN ${p.idempotencyKey}::uuid END)))`;
}

/** Builds the retention statements once; each is named, so each connection parses it once. */
export function prepareRetention({ db, tables, named }: PostgresHandle) {
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
            .limit(sql.placeholder('batchSize'))
            // Concurrent sweeps split the work instead of waiting on each other's rows.
            .for('update', { skipLocked: true }),
        ),
      )
      .prepare(named('orrery_delete_terminal_pipelines')),
    // Rate-limit starts no window counts any more, of buckets no attempt has counted in since (see buckets.ts).
    deleteExpiredRateLimitStarts: db
      .delete(r)
      .where(
        sql`ctid IN (SELECT ctid FROM ${r} WHERE ${r.expiresAt} < ${bind(r.expiresAt, 'before')} LIMIT ${sql.placeholder('batchSize')})`,
      )
      .prepare(named('orrery_delete_expired_rate_limit_starts')),
  };
}

export type RetentionStatements = ReturnType<typeof prepareRetention>;
