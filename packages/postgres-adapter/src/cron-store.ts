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
import { and, asc, desc, eq, getTableColumns, gte, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import {
  arrayParam,
  bind,
  bindAllColumns,
  dateToIso,
  encodeJson,
  encodeUuidList,
  fieldsOf,
  inTextList,
} from './codec.js';
import { createPipelinesIn } from './execution-store.js';
import { cronExecutions as c, pipelineExecutions as p, cronSchedules as s } from './schema.js';
import { type PostgresDb, type PostgresHandle, sqlState, statement, transaction } from './transaction.js';

/**
 * A `claimed` row is lost once both its fire time and its claim are older than the lost
 * threshold: a slot claimed late (after an outage) gets the whole threshold for its handoff.
 */
const LOST_BEFORE = and(lt(c.fireAt, bind(c.fireAt, 'lostBefore')), lt(c.claimedAt, bind(c.claimedAt, 'lostBefore')));

const placeholder = sql.placeholder;
const occurrenceRow = getTableColumns(c);

// Literals, not bound parameters, so that a generic plan can use the partial indexes.
const ENABLED = sql`${s.enabled}`;
const IS_CLAIMED = sql`${c.status} = 'claimed'`;
const now = bind(c.claimedAt, 'now');
const recoveryLeaseFence = and(
  eq(c.id, bind(c.id, 'id')),
  eq(c.recoveryLeaseOwner, bind(c.recoveryLeaseOwner, 'runnerId')),
  IS_CLAIMED,
);
const clearedRecoveryLease = { recoveryLeaseOwner: null, recoveryLeaseExpiresAt: null };
/** Rows per multi-row INSERT: 19 parameters each, well under Postgres's 65,535 per statement. */
const INSERT_CHUNK = 1000;
/** A handoff delay in milliseconds (numeric, exact to the microsecond). */
const DELAY_MS = sql`extract(epoch FROM ${c.handedOffAt} - ${c.scheduledTime}) * 1000`;

/** `(schedule, scheduled time)`: the slot a non-manual ledger row holds. */
function slotKey(row: { scheduleId: string; scheduledTime: Date }): string {
  return `${row.scheduleId}@${row.scheduledTime.getTime()}`;
}

/** A new ledger row with its recovery fields empty. */
function storedRow(row: NewCronExecution): CronExecutionRow {
  return {
    ...row,
    pipelineExecutionId: null,
    handedOffAt: null,
    recoveryAttempts: 0,
    recovered: false,
    nextRecoveryAt: null,
    recoveryLeaseOwner: null,
    recoveryLeaseExpiresAt: null,
    abandonReason: null,
  };
}

/** Inserts ledger rows ON CONFLICT DO NOTHING, a chunk per statement; returns the rows inserted, in input order. */
async function insertOccurrenceRows(tx: PostgresDb, rows: readonly NewCronExecution[]): Promise<CronExecutionRow[]> {
  const inserted: CronExecutionRow[] = [];
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
    const chunk = rows.slice(start, start + INSERT_CHUNK).map(storedRow);
    inserted.push(...(await tx.insert(c).values(chunk).onConflictDoNothing().returning()));
  }
  return inserted;
}

/**
 * Pairs input rows with the rows an insert returned: a returned row belongs to the first input
 * row with its id (Postgres inserts a multi-row VALUES in order, and DO NOTHING skips later
 * duplicates). Undefined where the input row was not inserted.
 */
function matchInserted(rows: readonly NewCronExecution[], inserted: readonly CronExecutionRow[]) {
  const byId = new Map(inserted.map((row) => [row.id, row]));
  return rows.map((row) => {
    const match = byId.get(row.id);
    byId.delete(row.id);
    return match;
  });
}

/**
 * Backfill reclaims missed or abandoned slots without a pipeline as `claimed`/`backfill` rows,
 * one statement for every slot (rows given as parallel arrays).
 */
async function reclaimForBackfill(tx: PostgresDb, rows: readonly NewCronExecution[]): Promise<CronExecutionRow[]> {
  if (rows.length === 0) return [];
  // Raw SQL: rows from parallel arrays (unnest), which drizzle's builder cannot name as an UPDATE source.
  const source = sql`unnest(${arrayParam(encodeUuidList(rows.map((row) => row.scheduleId)))}::uuid[],
      ${arrayParam(rows.map((row) => dateToIso(row.scheduledTime)))}::timestamptz[],
      ${arrayParam(rows.map((row) => dateToIso(row.claimedAt)))}::timestamptz[], ${arrayParam(rows.map((row) => row.claimedBy))}::text[],
      ${arrayParam(rows.map((row) => dateToIso(row.fireAt)))}::timestamptz[], ${arrayParam(rows.map((row) => row.workflowName))}::text[],
      ${arrayParam(rows.map((row) => encodeJson(row.context)))}::text[])
    AS v(schedule_id, scheduled_time, claimed_at, claimed_by, fire_at, workflow_name, context)`;
  return tx
    .update(c)
    .set({
      status: 'claimed',
      source: 'backfill',
      claimedAt: sql`v.claimed_at`,
      claimedBy: sql`v.claimed_by`,
      fireAt: sql`v.fire_at`,
      missedCount: 1,
      // A fresh request: the attempts an earlier recovery used up do not count against it.
      recoveryAttempts: 0,
      workflowName: sql`v.workflow_name`,
      context: sql`v.context::jsonb`,
      nextRecoveryAt: null,
      abandonReason: null,
      ...clearedRecoveryLease,
    })
    .from(source)
    .where(
      and(
        sql`${c.scheduleId} = v.schedule_id`,
        sql`${c.scheduledTime} = v.scheduled_time`,
        sql`${c.status} IN ('missed', 'abandoned')`,
        isNull(c.pipelineExecutionId),
        sql`${c.source} <> 'manual'`,
      ),
    )
    .returning();
}

/**
 * Not a `handed_off` row whose pipeline is still pending, running or paused: the overlap check
 * reads those rows, so retention keeps them however old their slot is (a fresh backfill of old
 * slots). Raw SQL: a probe of the pipeline table, which the cron schema does not reference.
 */
const NOT_OVERLAPPING = sql`NOT EXISTS (SELECT 1 FROM pipeline_executions pe
  WHERE pe.id = ${c.pipelineExecutionId} AND pe.status IN ('pending', 'running', 'paused'))`;

/** Builds every statement once; `.prepare()` names it, so each connection parses it once. */
function prepareStatements(handle: PostgresHandle) {
  const { db } = handle;
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
                IS_CLAIMED,
                LOST_BEFORE,
                or(isNull(c.nextRecoveryAt), lte(c.nextRecoveryAt, now)),
                or(isNull(c.recoveryLeaseExpiresAt), lt(c.recoveryLeaseExpiresAt, now)),
                inTextList(c.workflowName, placeholder('workflows')),
              ),
            )
            .orderBy(asc(c.fireAt))
            .limit(placeholder('limit'))
            .for('update', { skipLocked: true }),
        ),
      )
      .returning(),
  );
  return {
    insertSchedule: db
      .insert(s)
      .values(bindAllColumns(s))
      .onConflictDoNothing()
      .returning()
      .prepare('orrery_insert_schedule'),
    selectSchedule: db
      .select()
      .from(s)
      .where(eq(s.id, bind(s.id, 'id')))
      .prepare('orrery_select_schedule'),
    selectScheduleByName: db
      .select()
      .from(s)
      .where(eq(s.name, bind(s.name, 'name')))
      .prepare('orrery_select_schedule_by_name'),
    deleteSchedule: db
      .delete(s)
      .where(eq(s.id, bind(s.id, 'id')))
      .prepare('orrery_delete_schedule'),
    linkOccurrence: db
      .update(c)
      .set({
        status: 'handed_off',
        pipelineExecutionId: bind(c.pipelineExecutionId, 'pipelineId'),
        handedOffAt: bind(c.handedOffAt, 'now'),
        ...clearedRecoveryLease,
      })
      .where(and(eq(c.id, bind(c.id, 'id')), IS_CLAIMED))
      .prepare('orrery_link_occurrence'),
    // Claims the lost rows (SKIP LOCKED: recoverers split them) and reads each one's schedule, in one statement.
    claimLost: db
      .with(lost)
      .select({ row: fieldsOf(lost, occurrenceRow), schedule: getTableColumns(s) })
      .from(lost)
      .leftJoin(s, eq(s.id, lost.scheduleId))
      .orderBy(asc(lost.fireAt))
      .prepare('orrery_claim_lost'),
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
        .prepare('orrery_recovery_linked'),
      abandoned: db
        .update(c)
        .set({ status: 'abandoned', abandonReason: bind(c.abandonReason, 'reason'), ...clearedRecoveryLease })
        .where(recoveryLeaseFence)
        .prepare('orrery_recovery_abandoned'),
      retry: db
        .update(c)
        .set({
          nextRecoveryAt: bind(c.nextRecoveryAt, 'nextRecoveryAt'),
          recoveryAttempts: sql`${c.recoveryAttempts} - ${placeholder('refund')}::int`,
          ...clearedRecoveryLease,
        })
        .where(recoveryLeaseFence)
        .prepare('orrery_recovery_retry'),
    },
    selectOccurrence: db
      .select()
      .from(c)
      .where(eq(c.id, bind(c.id, 'id')))
      .prepare('orrery_select_occurrence'),
    listOccurrences: db
      .select()
      .from(c)
      .where(eq(c.scheduleId, bind(c.scheduleId, 'scheduleId')))
      .orderBy(desc(c.scheduledTime), desc(c.claimedAt))
      .limit(placeholder('limit'))
      .offset(placeholder('offset'))
      .prepare('orrery_list_occurrences'),
    countLost: db
      .select({ count: sql<number>`count(*)::int` })
      .from(c)
      .where(and(IS_CLAIMED, LOST_BEFORE))
      .prepare('orrery_count_lost_occurrences'),
    occurrenceStats: db
      .select({
        total: sql<number>`count(*)::int`,
        handedOff: sql<number>`(count(*) FILTER (WHERE ${c.status} = 'handed_off'))::int`,
        lost: sql<number>`(count(*) FILTER (WHERE ${IS_CLAIMED} AND ${LOST_BEFORE}))::int`,
        skipped: sql<number>`(count(*) FILTER (WHERE ${c.status} = 'skipped'))::int`,
        missed: sql<number>`(count(*) FILTER (WHERE ${c.status} = 'missed'))::int`,
        abandoned: sql<number>`(count(*) FILTER (WHERE ${c.status} = 'abandoned'))::int`,
        meanDelayMs: sql<number | null>`avg(${DELAY_MS}) FILTER (WHERE ${c.status} = 'handed_off')`.mapWith(Number),
        // percentile_disc(0.99): the first delay whose cumulative share reaches 99%, i.e. rank ceil(0.99 n) of n.
        p99DelayMs: sql<
          number | null
        >`percentile_disc(0.99) WITHIN GROUP (ORDER BY ${DELAY_MS}) FILTER (WHERE ${c.status} = 'handed_off')`.mapWith(
          Number,
        ),
      })
      .from(c)
      .where(gte(c.scheduledTime, bind(c.scheduledTime, 'since')))
      .prepare('orrery_occurrence_stats'),
    recoveryCounts: db
      .select({
        totalRecoveryAttempts: sql<number>`coalesce(sum(${c.recoveryAttempts}), 0)`.mapWith(Number),
        successfulRecoveries: sql<number>`count(*) FILTER (WHERE ${c.recovered})`.mapWith(Number),
        abandonedRecoveries:
          sql<number>`count(*) FILTER (WHERE ${c.status} = 'abandoned' AND ${c.recoveryAttempts} > 0)`.mapWith(Number),
      })
      .from(c)
      .prepare('orrery_recovery_counts'),
    findOccurrencePipeline: db
      .select({ id: p.id })
      .from(p)
      .where(eq(p.idempotencyKey, bind(p.idempotencyKey, 'key')))
      .prepare('orrery_find_occurrence_pipeline'),
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
            .limit(placeholder('batchSize'))
            .for('update', { skipLocked: true }),
        ),
      )
      .prepare('orrery_delete_terminal_occurrences'),
  };
}

/** Locks up to `limit` due enabled schedules of `workflowNames`, earliest first; SKIP LOCKED, so tickers split them. */
function selectDue(tx: PostgresDb, request: ClaimDueRequest): Promise<ScheduleRow[]> {
  return tx
    .select()
    .from(s)
    .where(and(ENABLED, lte(s.nextRunAt, request.now), inTextList(s.workflowName, [...request.workflowNames])))
    .orderBy(asc(s.nextRunAt))
    .limit(request.limit)
    .for('no key update', { skipLocked: true });
}

/**
 * The ids among `scheduleIds` with an active occurrence: a `claimed` ledger row, or a
 * `handed_off` one whose pipeline is unfinished. Two probes that cost what is in flight, not
 * the schedule's history: its claimed rows through the recovery index, and the unfinished cron
 * pipelines, whose idempotency key is their occurrence's id (DESIGN: the handoff uses the row id
 * as the key), each checked against its ledger row by primary key.
 */
async function selectActiveSchedules(tx: PostgresDb, scheduleIds: readonly string[]): Promise<Set<string>> {
  if (scheduleIds.length === 0) return new Set();
  // Raw SQL: EXISTS probes over a parameter array, and a key cast guarded so that a key that is not a UUID cannot fail it.
  const result = await tx.execute<{ id: string }>(sql`SELECT d.id::text AS id
    FROM unnest(${arrayParam(encodeUuidList(scheduleIds))}::uuid[]) AS d(id)
    WHERE EXISTS (SELECT 1 FROM cron_executions ce WHERE ce.status = 'claimed' AND ce.schedule_id = d.id)
      OR EXISTS (SELECT 1 FROM pipeline_executions pe
        JOIN cron_executions ce ON ce.id = (CASE WHEN pe.idempotency_key
          ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN pe.idempotency_key::uuid END)
        WHERE pe.status IN ('pending', 'running', 'paused') AND pe.scheduled_time IS NOT NULL
          AND ce.schedule_id = d.id AND ce.status = 'handed_off' AND ce.pipeline_execution_id = pe.id)`);
  return new Set(result.rows.map((row) => row.id));
}

/**
 * The slots in [nextRunAt, missedBefore) that already hold a non-manual ledger row, for each
 * schedule that may have missed slots (nextRunAt before missedBefore): a `missed` summary must
 * skip them. One statement over the schedule-time index; nothing to read on a punctual tick.
 */
async function selectTakenSlots(
  tx: PostgresDb,
  due: readonly ScheduleRow[],
  missedBefore: Date | undefined,
): Promise<Map<string, Date[]>> {
  const taken = new Map<string, Date[]>();
  if (missedBefore === undefined) return taken;
  const late = due.filter((schedule) => schedule.nextRunAt !== null && schedule.nextRunAt < missedBefore);
  if (late.length === 0) return taken;
  for (const schedule of late) taken.set(schedule.id, []);
  const from = new Date(Math.min(...late.map((schedule) => schedule.nextRunAt!.getTime())));
  const rows = await tx
    .select({ scheduleId: c.scheduleId, scheduledTime: c.scheduledTime })
    .from(c)
    .where(
      and(
        // Raw SQL: a uuid array parameter, which drizzle's inArray would expand into one parameter per id.
        sql`${c.scheduleId} = ANY(${arrayParam(encodeUuidList(late.map((schedule) => schedule.id)))}::uuid[])`,
        gte(c.scheduledTime, from),
        lt(c.scheduledTime, missedBefore),
        sql`${c.source} <> 'manual'`,
      ),
    )
    .orderBy(asc(c.scheduledTime));
  const nextRunAt = new Map(late.map((schedule) => [schedule.id, schedule.nextRunAt!.getTime()]));
  for (const row of rows) {
    if (row.scheduledTime.getTime() >= nextRunAt.get(row.scheduleId)!)
      taken.get(row.scheduleId)!.push(row.scheduledTime);
  }
  return taken;
}

/**
 * Advances planned schedules by compare-and-set on `version`, one statement for all of them;
 * returns the ids it advanced (all of them: their rows are locked).
 */
async function advanceSchedules(
  tx: PostgresDb,
  advances: ReadonlyArray<{ schedule: ScheduleRow; nextRunAt: Date | null; lastRunAt: Date | null }>,
  at: Date,
): Promise<Set<string>> {
  if (advances.length === 0) return new Set();
  const iso = (date: Date | null) => (date === null ? null : dateToIso(date));
  // Raw SQL: rows from parallel arrays (unnest), which drizzle's builder cannot name as an UPDATE source.
  const source = sql`unnest(${arrayParam(encodeUuidList(advances.map((a) => a.schedule.id)))}::uuid[],
      ${arrayParam(advances.map((a) => a.schedule.version))}::int[], ${arrayParam(advances.map((a) => iso(a.nextRunAt)))}::timestamptz[],
      ${arrayParam(advances.map((a) => iso(a.lastRunAt)))}::timestamptz[]) AS v(id, version, next_run_at, last_run_at)`;
  const advanced = await tx
    .update(s)
    .set({
      nextRunAt: sql`v.next_run_at`,
      lastRunAt: sql`v.last_run_at`,
      version: sql`${s.version} + 1`,
      updatedAt: at,
    })
    .from(source)
    .where(and(sql`${s.id} = v.id`, sql`${s.version} = v.version`))
    .returning({ id: s.id });
  return new Set(advanced.map((row) => row.id));
}

/**
 * In-transaction handoff: creates the pipeline of each claimed row whose fire time has come
 * (or finds it by key) and links the rows in one statement, inside the claim transaction.
 */
async function handOffInTransaction(
  tx: PostgresDb,
  rows: readonly CronExecutionRow[],
  prepareHandoff: (occurrence: CronExecutionRow) => NewPipeline | null,
  now: Date,
): Promise<CronExecutionRow[]> {
  const due: CronExecutionRow[] = [];
  const pipelines: NewPipeline[] = [];
  for (const row of rows) {
    const pipeline = row.fireAt.getTime() <= now.getTime() ? prepareHandoff(row) : null;
    if (pipeline === null) continue;
    due.push(row);
    pipelines.push(pipeline);
  }
  const stored = await createPipelinesIn(tx, pipelines);
  const links = new Map(due.map((row, i) => [row.id, stored[i]!.pipeline.id]));
  if (links.size > 0) {
    // Raw SQL: rows from parallel arrays (unnest), which drizzle's builder cannot name as an UPDATE source.
    const source = sql`unnest(${arrayParam(encodeUuidList([...links.keys()]))}::uuid[],
      ${arrayParam(encodeUuidList([...links.values()]))}::uuid[]) AS v(id, pipeline_id)`;
    await tx
      .update(c)
      .set({ status: 'handed_off', pipelineExecutionId: sql`v.pipeline_id`, handedOffAt: now })
      .from(source)
      .where(and(sql`${c.id} = v.id`, IS_CLAIMED));
  }
  return rows.map((row) => {
    const pipelineExecutionId = links.get(row.id);
    if (pipelineExecutionId === undefined) return row;
    return { ...row, status: 'handed_off', pipelineExecutionId, handedOffAt: now };
  });
}

/** True for Postgres's unique violation on `cron_schedules.name`. */
function isNameTaken(error: unknown): boolean {
  const cause = (error as { cause?: { constraint?: unknown } })?.cause;
  const constraint = (error as { constraint?: unknown })?.constraint ?? cause?.constraint;
  return sqlState(error) === '23505' && constraint === 'cron_schedules_name_key';
}

/** {@link CronStore} on Postgres: each method is one transaction, most of them one statement. */
export class PostgresCronStore implements CronStore {
  readonly #handle: PostgresHandle;
  readonly #q: ReturnType<typeof prepareStatements>;

  /** Builds every statement for `handle`; the schema must be migrated. */
  constructor(handle: PostgresHandle) {
    this.#handle = handle;
    this.#q = prepareStatements(handle);
  }

  insertSchedule(schedule: ScheduleRow): Promise<{ schedule: ScheduleRow; created: boolean }> {
    return statement('insertSchedule', async () => {
      const [inserted] = await this.#q.insertSchedule.execute({ ...schedule });
      if (inserted !== undefined) return { schedule: inserted, created: true };
      const [existing] =
        schedule.name === null ? [] : await this.#q.selectScheduleByName.execute({ name: schedule.name });
      if (existing === undefined) {
        throw new DatabaseError(`insertSchedule failed: schedule ${schedule.id} already exists`);
      }
      return { schedule: existing, created: false };
    });
  }

  getSchedule(id: string): Promise<ScheduleRow | null> {
    return statement('getSchedule', async () => (await this.#q.selectSchedule.execute({ id }))[0] ?? null);
  }

  getScheduleByName(name: string): Promise<ScheduleRow | null> {
    return statement(
      'getScheduleByName',
      async () => (await this.#q.selectScheduleByName.execute({ name }))[0] ?? null,
    );
  }

  listSchedules(filter: ScheduleFilter): Promise<ScheduleRow[]> {
    return statement('listSchedules', () =>
      this.#handle.db
        .select()
        .from(s)
        .where(
          and(
            filter.enabledOnly === true ? ENABLED : undefined,
            filter.workflowName === undefined ? undefined : eq(s.workflowName, filter.workflowName),
          ),
        )
        // Postgres has no insertion order to break ties between schedules created in the same millisecond: the id does.
        .orderBy(asc(s.createdAt), asc(s.id))
        .limit(filter.limit)
        .offset(filter.offset),
    );
  }

  updateSchedule(
    id: string,
    expectedVersion: number,
    patch: Partial<Omit<ScheduleRow, 'id' | 'version' | 'createdAt'>>,
  ): Promise<ScheduleRow | null> {
    return statement('updateSchedule', async () => {
      try {
        const [updated] = await this.#handle.db
          .update(s)
          .set({ ...patch, version: sql`${s.version} + 1` })
          .where(and(eq(s.id, id), eq(s.version, expectedVersion)))
          .returning();
        return updated ?? null;
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
    return statement('deleteSchedule', async () => ((await this.#q.deleteSchedule.execute({ id })).rowCount ?? 0) > 0);
  }

  claimDueSchedules(request: ClaimDueRequest): Promise<CronExecutionRow[]> {
    if (request.workflowNames.length === 0 || request.limit <= 0) return Promise.resolve([]);
    return transaction(this.#handle, 'claimDueSchedules', async (tx) => {
      const due = await selectDue(tx, request);
      if (due.length === 0) return [];
      // Read after the locks are held, on a snapshot that sees every claim committed before them.
      const active = await selectActiveSchedules(
        tx,
        due.filter((schedule) => schedule.overlapPolicy === 'skip').map((schedule) => schedule.id),
      );
      const taken = await selectTakenSlots(tx, due, request.missedBefore);
      const plans = [];
      for (const schedule of due) {
        const takenSlots = taken.get(schedule.id);
        const plan = request.plan(schedule, {
          hasActiveOccurrence: active.has(schedule.id),
          ...(takenSlots !== undefined && { takenSlots }),
        });
        if (plan !== null) plans.push({ schedule, ...plan });
      }
      const advanced = await advanceSchedules(tx, plans, request.now);
      // Cannot miss under the row locks; if it ever did, that schedule stays due and writes nothing.
      const occurrences = plans.filter((plan) => advanced.has(plan.schedule.id)).flatMap((plan) => plan.occurrences);
      const claimed = (await insertOccurrenceRows(tx, occurrences)).filter((row) => row.status === 'claimed');
      const { prepareHandoff } = request;
      if (prepareHandoff === undefined) return claimed;
      return handOffInTransaction(tx, claimed, prepareHandoff, request.now);
    });
  }

  insertOccurrences(rows: readonly NewCronExecution[]): Promise<{ claimed: CronExecutionRow[]; existing: number }> {
    if (rows.length === 0) return Promise.resolve({ claimed: [], existing: 0 });
    return transaction(this.#handle, 'insertOccurrences', async (tx) => {
      const inserted = matchInserted(rows, await insertOccurrenceRows(tx, rows));
      // The first backfill row of each slot that found it taken may reclaim it; later ones find it claimed.
      const reclaimable = new Map<string, NewCronExecution>();
      rows.forEach((row, i) => {
        if (inserted[i] === undefined && row.source === 'backfill' && !reclaimable.has(slotKey(row))) {
          reclaimable.set(slotKey(row), row);
        }
      });
      const reclaimed = new Map(
        (await reclaimForBackfill(tx, [...reclaimable.values()])).map((row) => [slotKey(row), row]),
      );
      const claimed: CronExecutionRow[] = [];
      let existing = 0;
      rows.forEach((row, i) => {
        let stored = inserted[i];
        if (stored === undefined && reclaimable.get(slotKey(row)) === row) stored = reclaimed.get(slotKey(row));
        if (stored === undefined) existing += 1;
        else if (stored.status === 'claimed') claimed.push(stored);
      });
      return { claimed, existing };
    });
  }

  linkOccurrence(id: string, pipelineExecutionId: string, now: Date): Promise<boolean> {
    return statement(
      'linkOccurrence',
      async () =>
        ((await this.#q.linkOccurrence.execute({ id, pipelineId: pipelineExecutionId, now })).rowCount ?? 0) > 0,
    );
  }

  claimLostOccurrences(request: ClaimLostRequest): Promise<LostOccurrence[]> {
    if (request.workflowNames.length === 0 || request.limit <= 0) return Promise.resolve([]);
    return statement('claimLostOccurrences', async () => {
      const rows = await this.#q.claimLost.execute({
        now: request.now,
        lostBefore: request.lostBefore,
        workflows: [...request.workflowNames],
        limit: request.limit,
        runnerId: request.runnerId,
        leaseExpiresAt: new Date(Date.parse(dateToIso(request.now)) + request.leaseMs),
      });
      return rows.map((row) => ({ row: row.row as CronExecutionRow, schedule: row.schedule ?? null }));
    });
  }

  finishRecovery(id: string, runnerId: string, outcome: RecoveryOutcome, now: Date): Promise<boolean> {
    return statement('finishRecovery', async () => {
      const fence = { id, runnerId, now };
      const result = await (() => {
        switch (outcome.status) {
          case 'linked':
            return this.#q.finishRecovery.linked.execute({ ...fence, pipelineId: outcome.pipelineExecutionId });
          case 'abandoned':
            return this.#q.finishRecovery.abandoned.execute({ ...fence, reason: outcome.reason });
          case 'retry':
            return this.#q.finishRecovery.retry.execute({
              ...fence,
              nextRecoveryAt: outcome.nextRecoveryAt,
              refund: outcome.refundAttempt ? 1 : 0,
            });
        }
      })();
      return (result.rowCount ?? 0) > 0;
    });
  }

  getOccurrence(id: string): Promise<CronExecutionRow | null> {
    return statement('getOccurrence', async () => (await this.#q.selectOccurrence.execute({ id }))[0] ?? null);
  }

  listOccurrences(scheduleId: string, limit: number, offset: number): Promise<CronExecutionRow[]> {
    return statement('listOccurrences', () => this.#q.listOccurrences.execute({ scheduleId, limit, offset }));
  }

  occurrenceStats(since: Date, lostBefore: Date): Promise<OccurrenceStats> {
    return statement('occurrenceStats', async () => {
      const [stats] = await this.#q.occurrenceStats.execute({ since, lostBefore });
      return { ...stats!, meanDelayMs: stats!.meanDelayMs ?? null, p99DelayMs: stats!.p99DelayMs ?? null };
    });
  }

  recoveryCounts(): Promise<RecoveryCounts> {
    return statement('recoveryCounts', async () => (await this.#q.recoveryCounts.execute())[0]!);
  }

  countLostOccurrences(lostBefore: Date): Promise<number> {
    return statement(
      'countLostOccurrences',
      async () => (await this.#q.countLost.execute({ lostBefore }))[0]?.count ?? 0,
    );
  }

  findOccurrencePipeline(occurrenceId: string): Promise<string | null> {
    return statement(
      'findOccurrencePipeline',
      async () => (await this.#q.findOccurrencePipeline.execute({ key: occurrenceId }))[0]?.id ?? null,
    );
  }

  deleteTerminalOccurrences(before: Date, batchSize: number): Promise<number> {
    return statement(
      'deleteTerminalOccurrences',
      async () => (await this.#q.deleteTerminalOccurrences.execute({ before, batchSize })).rowCount ?? 0,
    );
  }
}
