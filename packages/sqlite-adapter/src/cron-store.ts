import {
  type ClaimDueRequest,
  type ClaimLostRequest,
  type CronExecutionRow,
  type CronStore,
  DatabaseError,
  type LostOccurrence,
  type NewCronExecution,
  type NewPipeline,
  type OccurrenceStats,
  type RecoveryCounts,
  type RecoveryOutcome,
  ScheduleConflictError,
  type ScheduleFilter,
  type ScheduleRow,
} from '@orreryjs/core';
import { and, asc, desc, eq, gte, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import {
  bind,
  bindAllColumns,
  dateToMillis,
  encodeTextList,
  encodeUuidList,
  textListSql,
  uuidListSql,
} from './codec.js';
import type { SqliteExecutionStore } from './execution-store.js';
import { cronExecutions as c, pipelineExecutions as p, cronSchedules as s } from './schema.js';
import { readTransaction, type SqliteHandle, writeTransaction } from './transaction.js';

/**
 * A `claimed` row is lost once both its fire time and its claim are older than the lost
 * threshold: a slot claimed late (after an outage) gets the whole threshold for its handoff.
 */
const LOST_BEFORE = and(lt(c.fireAt, bind(c.fireAt, 'lostBefore')), lt(c.claimedAt, bind(c.claimedAt, 'lostBefore')));

const placeholder = sql.placeholder;

// Literals, not bound parameters, so that SQLite matches them to the partial indexes.
const ENABLED = sql`${s.enabled} = 1`;
const IS_CLAIMED = sql`${c.status} = 'claimed'`;
const now = bind(c.claimedAt, 'now');
const recoveryLeaseFence = and(
  eq(c.id, bind(c.id, 'id')),
  eq(c.recoveryLeaseOwner, bind(c.recoveryLeaseOwner, 'runnerId')),
  IS_CLAIMED,
);
const clearedRecoveryLease = { recoveryLeaseOwner: null, recoveryLeaseExpiresAt: null };

/**
 * Not a `handed_off` row whose pipeline is still pending, running or paused: the overlap check
 * reads those rows, so retention keeps them however old their slot is (a fresh backfill of old
 * slots). Raw SQL: a probe of the pipeline table, which the cron schema does not reference.
 */
const NOT_OVERLAPPING = sql`NOT EXISTS (SELECT 1 FROM pipeline_executions pe
  WHERE pe.id = ${c.pipelineExecutionId} AND pe.status IN ('pending', 'running', 'paused'))`;

/** Builds every statement once; `.prepare()` compiles it on the connection. */
function prepareStatements(handle: SqliteHandle) {
  const { db } = handle;
  return {
    insertSchedule: db.insert(s).values(bindAllColumns(s)).onConflictDoNothing().returning().prepare(),
    selectSchedule: db
      .select()
      .from(s)
      .where(eq(s.id, bind(s.id, 'id')))
      .prepare(),
    selectScheduleByName: db
      .select()
      .from(s)
      .where(eq(s.name, bind(s.name, 'name')))
      .prepare(),
    selectSchedules: db
      .select()
      .from(s)
      .where(sql`${s.id} IN ${uuidListSql(placeholder('ids'))}`)
      .prepare(),
    deleteSchedule: db
      .delete(s)
      .where(eq(s.id, bind(s.id, 'id')))
      .prepare(),
    selectDue: db
      .select()
      .from(s)
      .where(
        and(
          ENABLED,
          lte(s.nextRunAt, bind(s.nextRunAt, 'now')),
          sql`${s.workflowName} IN ${textListSql(placeholder('workflows'))}`,
        ),
      )
      .orderBy(asc(s.nextRunAt))
      .limit(placeholder('limit'))
      .prepare(),
    // Two probes that cost what is in flight, not the schedule's history: its `claimed` rows through the
    // recovery index, and the active cron pipelines (CROSS JOIN fixes them as the outer loop), whose
    // idempotency key is their occurrence's id (DESIGN: the handoff uses the row id as the key), each
    // checked against its ledger row by primary key. A unary `+` keeps SQLite off the history index.
    selectHasActiveOccurrence: db
      .select({
        // Raw SQL with aliases: drizzle leaves column names unqualified in a select list, which the subqueries' tables would capture.
        active: sql<number>`EXISTS (SELECT 1 FROM cron_executions ce
            WHERE ce.status = 'claimed' AND +ce.schedule_id = ${bind(c.scheduleId, 'scheduleId')})
          OR EXISTS (SELECT 1 FROM pipeline_executions pe
            CROSS JOIN cron_executions ce ON ce.id = unhex(replace(pe.idempotency_key, '-', ''))
            WHERE pe.status IN ('pending', 'running', 'paused') AND pe.scheduled_time IS NOT NULL
              AND +ce.schedule_id = ${bind(c.scheduleId, 'scheduleId')} AND ce.status = 'handed_off'
              AND ce.pipeline_execution_id = pe.id)`,
      })
      .from(s)
      .where(eq(s.id, bind(s.id, 'scheduleId')))
      .prepare(),
    // Slots of a late schedule that already hold a row (a backfill during the outage): a `missed` summary skips them.
    selectTakenSlots: db
      .select({ scheduledTime: c.scheduledTime })
      .from(c)
      .where(
        and(
          eq(c.scheduleId, bind(c.scheduleId, 'scheduleId')),
          gte(c.scheduledTime, bind(c.scheduledTime, 'from')),
          lt(c.scheduledTime, bind(c.scheduledTime, 'missedBefore')),
          sql`${c.source} <> 'manual'`,
        ),
      )
      .orderBy(asc(c.scheduledTime))
      .prepare(),
    advanceSchedule: db
      .update(s)
      .set({
        nextRunAt: bind(s.nextRunAt, 'nextRunAt'),
        lastRunAt: bind(s.lastRunAt, 'lastRunAt'),
        version: sql`${s.version} + 1`,
        updatedAt: bind(s.updatedAt, 'now'),
      })
      .where(and(eq(s.id, bind(s.id, 'id')), eq(s.version, placeholder('version'))))
      .prepare(),
    insertOccurrence: db.insert(c).values(bindAllColumns(c)).onConflictDoNothing().returning().prepare(),
    reclaimForBackfill: db
      .update(c)
      .set({
        status: 'claimed',
        source: 'backfill',
        claimedAt: bind(c.claimedAt, 'claimedAt'),
        claimedBy: bind(c.claimedBy, 'claimedBy'),
        fireAt: bind(c.fireAt, 'fireAt'),
        missedCount: 1,
        // A fresh request: the attempts an earlier recovery used up do not count against it.
        recoveryAttempts: 0,
        workflowName: bind(c.workflowName, 'workflowName'),
        context: bind(c.context, 'context'),
        nextRecoveryAt: null,
        abandonReason: null,
        ...clearedRecoveryLease,
      })
      .where(
        and(
          eq(c.scheduleId, bind(c.scheduleId, 'scheduleId')),
          eq(c.scheduledTime, bind(c.scheduledTime, 'scheduledTime')),
          sql`${c.status} IN ('missed', 'abandoned')`,
          isNull(c.pipelineExecutionId),
          sql`${c.source} <> 'manual'`,
        ),
      )
      .returning()
      .prepare(),
    linkOccurrence: db
      .update(c)
      .set({
        status: 'handed_off',
        pipelineExecutionId: bind(c.pipelineExecutionId, 'pipelineId'),
        handedOffAt: bind(c.handedOffAt, 'now'),
        ...clearedRecoveryLease,
      })
      .where(and(eq(c.id, bind(c.id, 'id')), IS_CLAIMED))
      .prepare(),
    claimLost: db
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
                IS_CLAIMED,
                LOST_BEFORE,
                or(isNull(c.nextRecoveryAt), lte(c.nextRecoveryAt, now)),
                or(isNull(c.recoveryLeaseExpiresAt), lt(c.recoveryLeaseExpiresAt, now)),
                sql`${c.workflowName} IN ${textListSql(placeholder('workflows'))}`,
              ),
            )
            .orderBy(asc(c.fireAt))
            .limit(placeholder('limit')),
        ),
      )
      .returning()
      .prepare(),
    finishRecovery: {
      linked: db
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
      abandoned: db
        .update(c)
        .set({ status: 'abandoned', abandonReason: bind(c.abandonReason, 'reason'), ...clearedRecoveryLease })
        .where(recoveryLeaseFence)
        .prepare(),
      retry: db
        .update(c)
        .set({
          nextRecoveryAt: bind(c.nextRecoveryAt, 'nextRecoveryAt'),
          recoveryAttempts: sql`${c.recoveryAttempts} - ${placeholder('refund')}`,
          ...clearedRecoveryLease,
        })
        .where(recoveryLeaseFence)
        .prepare(),
    },
    selectOccurrence: db
      .select()
      .from(c)
      .where(eq(c.id, bind(c.id, 'id')))
      .prepare(),
    listOccurrences: db
      .select()
      .from(c)
      .where(eq(c.scheduleId, bind(c.scheduleId, 'scheduleId')))
      .orderBy(desc(c.scheduledTime), desc(c.claimedAt))
      .limit(placeholder('limit'))
      .offset(placeholder('offset'))
      .prepare(),
    countLost: db
      .select({ count: sql<number>`count(*)` })
      .from(c)
      .where(and(sql`${c.status} = 'claimed'`, LOST_BEFORE))
      .prepare(),
    occurrenceCounts: db
      .select({
        total: sql<number>`count(*)`,
        handedOff: sql<number>`coalesce(sum(${c.status} = 'handed_off'), 0)`,
        lost: sql<number>`coalesce(sum(${c.status} = 'claimed' AND ${LOST_BEFORE}), 0)`,
        skipped: sql<number>`coalesce(sum(${c.status} = 'skipped'), 0)`,
        missed: sql<number>`coalesce(sum(${c.status} = 'missed'), 0)`,
        abandoned: sql<number>`coalesce(sum(${c.status} = 'abandoned'), 0)`,
        meanDelayMs: sql<
          number | null
        >`avg(CASE WHEN ${c.status} = 'handed_off' THEN ${c.handedOffAt} - ${c.scheduledTime} END)`,
      })
      .from(c)
      .where(gte(c.scheduledTime, bind(c.scheduledTime, 'since')))
      .prepare(),
    // Portable percentile: the delay at a given rank, by ORDER BY ... LIMIT 1 OFFSET rank.
    delayAtRank: db
      .select({ delayMs: sql<number>`${c.handedOffAt} - ${c.scheduledTime}` })
      .from(c)
      .where(and(gte(c.scheduledTime, bind(c.scheduledTime, 'since')), sql`${c.status} = 'handed_off'`))
      .orderBy(sql`${c.handedOffAt} - ${c.scheduledTime}`)
      .limit(1)
      .offset(placeholder('rank'))
      .prepare(),
    recoveryCounts: db
      .select({
        totalRecoveryAttempts: sql<number>`coalesce(sum(${c.recoveryAttempts}), 0)`,
        successfulRecoveries: sql<number>`coalesce(sum(${c.recovered}), 0)`,
        abandonedRecoveries: sql<number>`coalesce(sum(${c.status} = 'abandoned' AND ${c.recoveryAttempts} > 0), 0)`,
      })
      .from(c)
      .prepare(),
    findOccurrencePipeline: db
      .select({ id: p.id })
      .from(p)
      .where(eq(p.idempotencyKey, bind(p.idempotencyKey, 'key')))
      .prepare(),
    deleteTerminalOccurrences: db
      .delete(c)
      .where(
        inArray(
          c.id,
          db
            .select({ id: c.id })
            .from(c)
            .where(
              and(
                sql`${c.status} <> 'claimed'`,
                lt(sql`coalesce(${c.handedOffAt}, ${c.claimedAt})`, bind(c.claimedAt, 'before')),
                NOT_OVERLAPPING,
              ),
            )
            .limit(placeholder('batchSize')),
        ),
      )
      .prepare(),
  };
}

/** True for SQLite's unique violation on `cron_schedules.name`. */
function isNameTaken(error: unknown): boolean {
  const candidate = error as { code?: unknown; message?: unknown };
  return candidate?.code === 'SQLITE_CONSTRAINT_UNIQUE' && String(candidate.message).includes('cron_schedules.name');
}

/** {@link CronStore} on SQLite: each method is one synchronous `BEGIN IMMEDIATE` transaction. */
export class SqliteCronStore implements CronStore {
  readonly #handle: SqliteHandle;
  readonly #q: ReturnType<typeof prepareStatements>;
  readonly #executions: SqliteExecutionStore;

  /** Prepares every statement on `handle`; the schema must be migrated. */
  constructor(handle: SqliteHandle, executions: SqliteExecutionStore) {
    this.#handle = handle;
    this.#q = prepareStatements(handle);
    this.#executions = executions;
  }

  insertSchedule(schedule: ScheduleRow): Promise<{ schedule: ScheduleRow; created: boolean }> {
    return writeTransaction(this.#handle, 'insertSchedule', () => {
      const [inserted] = this.#q.insertSchedule.all({ ...schedule });
      if (inserted !== undefined) return { schedule: inserted, created: true };
      const existing = schedule.name === null ? undefined : this.#q.selectScheduleByName.get({ name: schedule.name });
      if (existing === undefined) {
        throw new DatabaseError(`insertSchedule failed: schedule ${schedule.id} already exists`);
      }
      return { schedule: existing, created: false };
    });
  }

  getSchedule(id: string): Promise<ScheduleRow | null> {
    return readTransaction(this.#handle, 'getSchedule', () => this.#q.selectSchedule.get({ id }) ?? null);
  }

  getScheduleByName(name: string): Promise<ScheduleRow | null> {
    return readTransaction(this.#handle, 'getScheduleByName', () => this.#q.selectScheduleByName.get({ name }) ?? null);
  }

  listSchedules(filter: ScheduleFilter): Promise<ScheduleRow[]> {
    return readTransaction(this.#handle, 'listSchedules', () =>
      this.#handle.db
        .select()
        .from(s)
        .where(
          and(
            filter.enabledOnly === true ? ENABLED : undefined,
            filter.workflowName === undefined ? undefined : eq(s.workflowName, filter.workflowName),
          ),
        )
        // rowid breaks ties between schedules created in the same millisecond: earlier insert first.
        .orderBy(asc(s.createdAt), sql`${s}.rowid`)
        .limit(filter.limit)
        .offset(filter.offset)
        .all(),
    );
  }

  updateSchedule(
    id: string,
    expectedVersion: number,
    patch: Partial<Omit<ScheduleRow, 'id' | 'version' | 'createdAt'>>,
  ): Promise<ScheduleRow | null> {
    return writeTransaction(this.#handle, 'updateSchedule', () => {
      try {
        const query = this.#handle.db
          .update(s)
          .set({ ...patch, version: sql`${s.version} + 1` })
          .where(and(eq(s.id, id), eq(s.version, expectedVersion)));
        return query.returning().get() ?? null;
      } catch (error) {
        if (!isNameTaken(error)) throw error;
        throw new ScheduleConflictError(
          `Schedule name "${patch.name}" is already taken by another schedule; choose another name or update that schedule.`,
          { cause: error },
        );
      }
    });
  }

  deleteSchedule(id: string): Promise<boolean> {
    return writeTransaction(this.#handle, 'deleteSchedule', () => this.#q.deleteSchedule.run({ id }).changes > 0);
  }

  claimDueSchedules(request: ClaimDueRequest): Promise<CronExecutionRow[]> {
    if (request.workflowNames.length === 0 || request.limit <= 0) return Promise.resolve([]);
    return writeTransaction(this.#handle, 'claimDueSchedules', () => {
      const due = this.#q.selectDue.all({
        now: request.now,
        workflows: encodeTextList(request.workflowNames),
        limit: request.limit,
      });
      const claimed: CronExecutionRow[] = [];
      for (const schedule of due) {
        const hasActiveOccurrence =
          schedule.overlapPolicy === 'skip' &&
          this.#q.selectHasActiveOccurrence.get({ scheduleId: schedule.id })?.active === 1;
        const takenSlots = this.#takenSlots(schedule, request.missedBefore);
        const plan = request.plan(schedule, { hasActiveOccurrence, ...(takenSlots !== undefined && { takenSlots }) });
        if (plan === null) continue;
        const advanced = this.#q.advanceSchedule.run({
          id: schedule.id,
          version: schedule.version,
          nextRunAt: plan.nextRunAt,
          lastRunAt: plan.lastRunAt,
          now: request.now,
        });
        // Cannot miss under BEGIN IMMEDIATE; if it ever did, the schedule stays due and writes nothing.
        if (advanced.changes === 0) continue;
        for (const occurrence of plan.occurrences) {
          const inserted = this.#insertOccurrence(occurrence);
          if (inserted?.status === 'claimed') claimed.push(inserted);
        }
      }
      const { prepareHandoff } = request;
      if (prepareHandoff === undefined) return claimed;
      return claimed.map((row) => this.#handOffInTransaction(row, prepareHandoff, request.now));
    });
  }

  /** In-transaction handoff of one claimed row: creates its pipeline (or finds it by key) and links it. */
  #handOffInTransaction(
    row: CronExecutionRow,
    prepareHandoff: (occurrence: CronExecutionRow) => NewPipeline | null,
    now: Date,
  ): CronExecutionRow {
    if (row.fireAt.getTime() > now.getTime()) return row;
    const pipeline = prepareHandoff(row);
    if (pipeline === null) return row;
    const { pipeline: stored } = this.#executions.createPipelineInTransaction(pipeline);
    this.#q.linkOccurrence.run({ id: row.id, pipelineId: stored.id, now });
    return { ...row, status: 'handed_off', pipelineExecutionId: stored.id, handedOffAt: now };
  }

  insertOccurrences(rows: readonly NewCronExecution[]): Promise<{ claimed: CronExecutionRow[]; existing: number }> {
    return writeTransaction(this.#handle, 'insertOccurrences', () => {
      const claimed: CronExecutionRow[] = [];
      let existing = 0;
      for (const row of rows) {
        const stored =
          this.#insertOccurrence(row) ??
          (row.source === 'backfill' ? this.#q.reclaimForBackfill.get({ ...row }) : undefined);
        if (stored === undefined) existing += 1;
        else if (stored.status === 'claimed') claimed.push(stored);
      }
      return { claimed, existing };
    });
  }

  linkOccurrence(id: string, pipelineExecutionId: string, now: Date): Promise<boolean> {
    return writeTransaction(
      this.#handle,
      'linkOccurrence',
      () => this.#q.linkOccurrence.run({ id, pipelineId: pipelineExecutionId, now }).changes > 0,
    );
  }

  claimLostOccurrences(request: ClaimLostRequest): Promise<LostOccurrence[]> {
    if (request.workflowNames.length === 0 || request.limit <= 0) return Promise.resolve([]);
    return writeTransaction(this.#handle, 'claimLostOccurrences', () => {
      const rows = this.#q.claimLost
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
      const schedules = new Map(this.#q.selectSchedules.all({ ids }).map((schedule) => [schedule.id, schedule]));
      return rows.map((row) => ({ row, schedule: schedules.get(row.scheduleId) ?? null }));
    });
  }

  finishRecovery(id: string, runnerId: string, outcome: RecoveryOutcome, now: Date): Promise<boolean> {
    return writeTransaction(this.#handle, 'finishRecovery', () => {
      const fence = { id, runnerId, now };
      switch (outcome.status) {
        case 'linked':
          return this.#q.finishRecovery.linked.run({ ...fence, pipelineId: outcome.pipelineExecutionId }).changes > 0;
        case 'abandoned':
          return this.#q.finishRecovery.abandoned.run({ ...fence, reason: outcome.reason }).changes > 0;
        case 'retry':
          return (
            this.#q.finishRecovery.retry.run({
              ...fence,
              nextRecoveryAt: outcome.nextRecoveryAt,
              refund: outcome.refundAttempt ? 1 : 0,
            }).changes > 0
          );
      }
    });
  }

  getOccurrence(id: string): Promise<CronExecutionRow | null> {
    return readTransaction(this.#handle, 'getOccurrence', () => this.#q.selectOccurrence.get({ id }) ?? null);
  }

  listOccurrences(scheduleId: string, limit: number, offset: number): Promise<CronExecutionRow[]> {
    return readTransaction(this.#handle, 'listOccurrences', () =>
      this.#q.listOccurrences.all({ scheduleId, limit, offset }),
    );
  }

  occurrenceStats(since: Date, lostBefore: Date): Promise<OccurrenceStats> {
    return readTransaction(this.#handle, 'occurrenceStats', () => {
      const counts = this.#q.occurrenceCounts.get({ since, lostBefore })!;
      // p99 = the delay at index ceil(0.99 n) - 1 of the delays sorted ascending.
      const rank = Math.ceil(0.99 * counts.handedOff) - 1;
      const p99 = rank < 0 ? undefined : this.#q.delayAtRank.get({ since, rank });
      return { ...counts, p99DelayMs: p99?.delayMs ?? null };
    });
  }

  recoveryCounts(): Promise<RecoveryCounts> {
    return readTransaction(this.#handle, 'recoveryCounts', () => this.#q.recoveryCounts.get()!);
  }

  countLostOccurrences(lostBefore: Date): Promise<number> {
    return readTransaction(
      this.#handle,
      'countLostOccurrences',
      () => this.#q.countLost.get({ lostBefore })?.count ?? 0,
    );
  }

  findOccurrencePipeline(occurrenceId: string): Promise<string | null> {
    return readTransaction(
      this.#handle,
      'findOccurrencePipeline',
      () => this.#q.findOccurrencePipeline.get({ key: occurrenceId })?.id ?? null,
    );
  }

  deleteTerminalOccurrences(before: Date, batchSize: number): Promise<number> {
    return writeTransaction(
      this.#handle,
      'deleteTerminalOccurrences',
      () => this.#q.deleteTerminalOccurrences.run({ before, batchSize }).changes,
    );
  }

  /** The slots in [nextRunAt, missedBefore) that already hold a non-manual row; undefined when none can be missed. */
  #takenSlots(schedule: ScheduleRow, missedBefore: Date | undefined): Date[] | undefined {
    if (missedBefore === undefined || schedule.nextRunAt === null || schedule.nextRunAt >= missedBefore)
      return undefined;
    const rows = this.#q.selectTakenSlots.all({ scheduleId: schedule.id, from: schedule.nextRunAt, missedBefore });
    return rows.map((row) => row.scheduledTime);
  }

  /** Inserts one ledger row ON CONFLICT DO NOTHING; undefined when its occurrence already had a row. */
  #insertOccurrence(row: NewCronExecution): CronExecutionRow | undefined {
    return this.#q.insertOccurrence.get({
      ...row,
      pipelineExecutionId: null,
      handedOffAt: null,
      recoveryAttempts: 0,
      recovered: false,
      nextRecoveryAt: null,
      recoveryLeaseOwner: null,
      recoveryLeaseExpiresAt: null,
      abandonReason: null,
    });
  }
}
