import type { ClaimLostRequest, LostOccurrence, RecoveryOutcome } from '@orreryjs/core';
import { and, asc, eq, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import { bind, dateToMillis, encodeTextList, encodeUuidList, textListSql, uuidListSql } from '../codec.js';
import type { SqliteHandle } from '../transaction.js';
import { isClaimed, isLost } from './conditions.js';

/*
 * Recovery: a `claimed` row whose handoff never linked is lost; recoverers claim it by
 * compare-and-set (attempt count and a recovery lease in the row) and commit the attempt's
 * outcome fenced on that lease.
 */

const clearedRecoveryLease = { recoveryLeaseOwner: null, recoveryLeaseExpiresAt: null };

/** Prepares the recovery statements once on the connection. */
export function prepareRecover({ db, tables }: SqliteHandle) {
  const { cronExecutions: c, cronSchedules: s } = tables;
  const now = bind(c.claimedAt, 'now');
  const recoveryLeaseFence = and(
    eq(c.id, bind(c.id, 'id')),
    eq(c.recoveryLeaseOwner, bind(c.recoveryLeaseOwner, 'runnerId')),
    isClaimed(tables),
  );
  const p = tables.pipelineExecutions;
  const claimLostRows = db
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
              sql`${c.workflowName} IN ${textListSql(sql.placeholder('workflows'))}`,
            ),
          )
          .orderBy(asc(c.fireAt))
          .limit(sql.placeholder('limit')),
      ),
    )
    .returning()
    .prepare();
  const selectSchedulesById = db
    .select()
    .from(s)
    .where(sql`${s.id} IN ${uuidListSql(sql.placeholder('ids'))}`)
    .prepare();
  return {
    // Recovery links a pipeline that already exists under the row's id as idempotency key before it hands off again.
    selectOccurrencePipeline: db
      .select({ id: p.id })
      .from(p)
      .where(eq(p.idempotencyKey, bind(p.idempotencyKey, 'key')))
      .prepare(),
    // Differs by necessity: no UPDATE in a CTE, so the claimed rows' schedules are a second read.
    claimLostOccurrences: [claimLostRows, selectSchedulesById] as const,
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
      .prepare(),
    abandonOccurrence: db
      .update(c)
      .set({ status: 'abandoned', abandonReason: bind(c.abandonReason, 'reason'), ...clearedRecoveryLease })
      .where(recoveryLeaseFence)
      .prepare(),
    scheduleRecoveryRetry: db
      .update(c)
      .set({
        nextRecoveryAt: bind(c.nextRecoveryAt, 'nextRecoveryAt'),
        recoveryAttempts: sql`${c.recoveryAttempts} - ${sql.placeholder('refund')}`,
        ...clearedRecoveryLease,
      })
      .where(recoveryLeaseFence)
      .prepare(),
  };
}

export type RecoverStatements = ReturnType<typeof prepareRecover>;

/** Claims up to `limit` lost rows for recovery, leased to the claimer, each with its live schedule. */
export function claimLostOccurrences(q: RecoverStatements, request: ClaimLostRequest): LostOccurrence[] {
  const [claimLostRows, selectSchedulesById] = q.claimLostOccurrences;
  const rows = claimLostRows
    .all({
      now: request.now,
      lostBefore: request.lostBefore,
      workflows: encodeTextList(request.workflowNames),
      limit: request.limit,
      runnerId: request.runnerId,
      leaseExpiresAt: new Date(dateToMillis(request.now) + request.leaseMs),
    })
    .sort((a, b) => a.fireAt.getTime() - b.fireAt.getTime());
  if (rows.length === 0) return [];
  const ids = encodeUuidList([...new Set(rows.map((row) => row.scheduleId))]);
  const schedules = new Map(selectSchedulesById.all({ ids }).map((schedule) => [schedule.id, schedule]));
  return rows.map((row) => ({ row, schedule: schedules.get(row.scheduleId) ?? null }));
}

/** Commits a recovery attempt's outcome, fenced on the recovery lease; false when fenced out. */
export function finishRecovery(
  q: RecoverStatements,
  id: string,
  runnerId: string,
  outcome: RecoveryOutcome,
  now: Date,
): boolean {
  const fence = { id, runnerId, now };
  switch (outcome.status) {
    case 'linked':
      return q.linkRecovered.run({ ...fence, pipelineId: outcome.pipelineExecutionId }).changes > 0;
    case 'abandoned':
      return q.abandonOccurrence.run({ ...fence, reason: outcome.reason }).changes > 0;
    case 'retry':
      return (
        q.scheduleRecoveryRetry.run({
          ...fence,
          nextRecoveryAt: outcome.nextRecoveryAt,
          refund: outcome.refundAttempt ? 1 : 0,
        }).changes > 0
      );
  }
}
