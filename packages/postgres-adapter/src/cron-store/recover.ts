import type { ClaimLostRequest, CronExecutionRow, LostOccurrence, RecoveryOutcome } from '@orreryjs/core';
import { and, asc, eq, getTableColumns, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import { bind, dateToIso, fieldsOf, inTextList } from '../codec.js';
import type { PostgresHandle } from '../transaction.js';
import { isClaimed, isLost } from './conditions.js';

/*
 * Recovery: a `claimed` row whose handoff never linked is lost; recoverers claim it by
 * compare-and-set (attempt count and a recovery lease in the row) and commit the attempt's
 * outcome fenced on that lease.
 */

const clearedRecoveryLease = { recoveryLeaseOwner: null, recoveryLeaseExpiresAt: null };

/** Builds the recovery statements once; each is named, so each connection parses it once. */
export function prepareRecover({ db, tables, named }: PostgresHandle) {
  const { cronExecutions: c, cronSchedules: s } = tables;
  const now = bind(c.claimedAt, 'now');
  const recoveryLeaseFence = and(
    eq(c.id, bind(c.id, 'id')),
    eq(c.recoveryLeaseOwner, bind(c.recoveryLeaseOwner, 'runnerId')),
    isClaimed(tables),
  );
  const lost = db.$with('lost').as(
    db
      .update(c)
      .set({
        recoveryAttempts: sql`${c.recoveryAttempts} + 1`,
        recoveryLeaseOwner: bind(c.recoveryLeaseOwner, 'runnerId'),
        recoveryLeaseExpiresAt: bind(c.recoveryLeaseExpiresAt, 'leaseExpiresAt'),
      })
      .where(
        inArray(
          c.id,
          db
            .select({ id: c.id })
            .from(c)
            .where(
              and(
                isClaimed(tables),
                isLost(tables),
                or(isNull(c.nextRecoveryAt), lte(c.nextRecoveryAt, now)),
                or(isNull(c.recoveryLeaseExpiresAt), lt(c.recoveryLeaseExpiresAt, now)),
                inTextList(c.workflowName, sql.placeholder('workflows')),
              ),
            )
            .orderBy(asc(c.fireAt))
            .limit(sql.placeholder('limit'))
            .for('update', { skipLocked: true }),
        ),
      )
      .returning(),
  );
  const p = tables.pipelineExecutions;
  return {
    // Recovery links a pipeline that already exists under the row's id as idempotency key before it hands off again.
    selectOccurrencePipeline: db
      .select({ id: p.id })
      .from(p)
      .where(eq(p.idempotencyKey, bind(p.idempotencyKey, 'key')))
      .prepare(named('orrery_find_occurrence_pipeline')),
    // Claims the lost rows (SKIP LOCKED: recoverers split them) and reads each one's schedule, in one statement.
    claimLostOccurrences: db
      .with(lost)
      .select({ row: fieldsOf(lost, getTableColumns(c)), schedule: getTableColumns(s) })
      .from(lost)
      .leftJoin(s, eq(s.id, lost.scheduleId))
      .orderBy(asc(lost.fireAt))
      .prepare(named('orrery_claim_lost')),
    linkRecovered: db
      .update(c)
      .set({
        status: 'handed_off',
        pipelineExecutionId: bind(c.pipelineExecutionId, 'pipelineId'),
        handedOffAt: now,
        recovered: true,
        ...clearedRecoveryLease,
      })
      .where(recoveryLeaseFence)
      .prepare(named('orrery_recovery_linked')),
    abandonOccurrence: db
      .update(c)
      .set({ status: 'abandoned', abandonReason: bind(c.abandonReason, 'reason'), ...clearedRecoveryLease })
      .where(recoveryLeaseFence)
      .prepare(named('orrery_recovery_abandoned')),
    scheduleRecoveryRetry: db
      .update(c)
      .set({
        nextRecoveryAt: bind(c.nextRecoveryAt, 'nextRecoveryAt'),
        recoveryAttempts: sql`${c.recoveryAttempts} - ${sql.placeholder('refund')}::int`,
        ...clearedRecoveryLease,
      })
      .where(recoveryLeaseFence)
      .prepare(named('orrery_recovery_retry')),
  };
}

export type RecoverStatements = ReturnType<typeof prepareRecover>;

/** Claims up to `limit` lost rows for recovery, leased to the claimer, each with its live schedule. */
export async function claimLostOccurrences(q: RecoverStatements, request: ClaimLostRequest): Promise<LostOccurrence[]> {
  const rows = await q.claimLostOccurrences.execute({
    now: request.now,
    lostBefore: request.lostBefore,
    workflows: [...request.workflowNames],
    limit: request.limit,
    runnerId: request.runnerId,
    leaseExpiresAt: new Date(Date.parse(dateToIso(request.now)) + request.leaseMs),
  });
  return rows.map((row) => ({ row: row.row as CronExecutionRow, schedule: row.schedule ?? null }));
}

/** Commits a recovery attempt's outcome, fenced on the recovery lease; false when fenced out. */
export async function finishRecovery(
  q: RecoverStatements,
  id: string,
  runnerId: string,
  outcome: RecoveryOutcome,
  now: Date,
): Promise<boolean> {
  const fence = { id, runnerId, now };
  const result = await (() => {
    switch (outcome.status) {
      case 'linked':
        return q.linkRecovered.execute({ ...fence, pipelineId: outcome.pipelineExecutionId });
      case 'abandoned':
        return q.abandonOccurrence.execute({ ...fence, reason: outcome.reason });
      case 'retry':
        return q.scheduleRecoveryRetry.execute({
          ...fence,
          nextRecoveryAt: outcome.nextRecoveryAt,
          refund: outcome.refundAttempt ? 1 : 0,
        });
    }
  })();
  return (result.rowCount ?? 0) > 0;
}
