import {
  type ClaimDueRequest,
  type CronExecutionRow,
  type LatestSchedulePipeline,
  newCronExecutionRow,
  SCHEDULER_OCCURRENCE_SOURCES,
  type ScheduleRow,
  UNFINISHED_PIPELINE_STATUSES,
} from '@orreryjs/core';
import { and, asc, desc, eq, gte, lt, lte, type SQL, sql } from 'drizzle-orm';
import { arrayParam, dateToIso, encodeUuidList, inTextList, statusIn } from '../codec.js';
import { cancelPipeline } from '../execution-store/control.js';
import type { InsertPipelines } from '../execution-store/pipelines.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb } from '../transaction.js';
import { isBuffered, isClaimed, isEnabled } from './conditions.js';
import { handOffInTransaction } from './handoff.js';
import { insertOccurrenceRows } from './ledger.js';

/*
 * Claim + phase 1, one transaction: lock the due schedules (SKIP LOCKED, so tickers split
 * them), plan each, advance `next_run_at` by compare-and-set on `version`, and write the
 * occurrences' ledger rows. With an in-transaction handoff the pipelines and links commit too.
 */

/** A schedule's advance as its plan decided it. */
interface Advance {
  schedule: ScheduleRow;
  nextRunAt: Date | null;
  lastRunAt: Date | null;
  runCount?: number;
  /** Disables the schedule with this note (maxRuns reached). */
  disableNote?: string | null;
}

/**
 * Turns bitmap scans off for the rest of the claim transaction (SET LOCAL), so that the due
 * schedules are walked in index order whatever the statistics say. Without statistics (a fresh
 * schema) Postgres estimates the due rows at a few hundred whatever their number; once the
 * claim's limit nears that estimate (a burst claims up to 500) it planned a bitmap scan of every
 * due schedule and a sort instead: 38 ms against 0.7 ms at 20,000 due. Sent with the claim's
 * BEGIN, in its round trip (see `transaction`). Differs by necessity: SQLite has no such plan to refuse.
 */
export const WALK_DUE_INDEX_IN_ORDER = 'SET LOCAL enable_bitmapscan = off';

/**
 * Locks up to `limit` due enabled schedules of `workflowNames`, earliest first; SKIP LOCKED, so
 * tickers split them. The workflow filter is wrapped in `coalesce(…, false)` (the same rows):
 * without statistics (a fresh schema) Postgres estimates `workflow_name = ANY(…)` at 0.5 %, so it
 * expected a handful of due rows and planned a bitmap scan of every due schedule and a sort
 * (40 ms at 20,000 due) instead of the ordered walk of the due index that stops after `limit`
 * (0.2 ms); a coalesce is estimated at one half whatever the statistics say.
 */
export function selectDueSchedules(db: PostgresDb, tables: PostgresTables, request: ClaimDueRequest) {
  const s = tables.cronSchedules;
  return db
    .select()
    .from(s)
    .where(
      and(
        isEnabled(tables),
        lte(s.nextRunAt, request.now),
        sql`coalesce(${inTextList(s.workflowName, [...request.workflowNames])}, false)`,
      ),
    )
    .orderBy(asc(s.nextRunAt))
    .limit(request.limit)
    .for('no key update', { skipLocked: true });
}

/**
 * The ids among `scheduleIds` with an active occurrence: a `claimed` (or, with
 * `includeBuffered`, `buffered`) ledger row, or a `handed_off` one whose pipeline is unfinished. Two probes that cost what is in flight, not
 * the schedule's history: its claimed rows through the recovery index, and the unfinished cron
 * pipelines, whose idempotency key is their occurrence's id (DESIGN: the handoff uses the row id
 * as the key), each checked against its ledger row by primary key.
 */
export function selectActiveSchedules(
  db: PostgresDb,
  tables: PostgresTables,
  scheduleIds: readonly string[],
  includeBuffered = true,
) {
  const { cronExecutions: c, pipelineExecutions: p } = tables;
  const buffered = includeBuffered
    ? sql`OR EXISTS (SELECT 1 FROM ${c} ce WHERE ce.status = 'buffered' AND ce.schedule_id = d.id)`
    : sql``;
  // Raw SQL: EXISTS probes over a parameter array, and a key cast guarded so that a key that is not a UUID cannot fail it.
  return db.execute<{ id: string }>(sql`SELECT d.id::text AS id
    FROM unnest(${arrayParam(encodeUuidList(scheduleIds))}::uuid[]) AS d(id)
    WHERE EXISTS (SELECT 1 FROM ${c} ce WHERE ce.status = 'claimed' AND ce.schedule_id = d.id) ${buffered}
      OR EXISTS (SELECT 1 FROM ${p} pe
        JOIN ${c} ce ON ce.id = (CASE WHEN pe.idempotency_key
          ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN pe.idempotency_key::uuid END)
        WHERE ${statusIn(sql`pe.status`, UNFINISHED_PIPELINE_STATUSES)} AND pe.scheduled_time IS NOT NULL
          AND ce.schedule_id = d.id AND ce.status = 'handed_off' AND ce.pipeline_execution_id = pe.id)`);
}

/**
 * The unfinished pipelines of the `handed_off` occurrences of `scheduleIds`: what a
 * `cancel_other` schedule's new occurrence replaces.
 */
export function selectActivePipelines(db: PostgresDb, tables: PostgresTables, scheduleIds: readonly string[]) {
  const { cronExecutions: c, pipelineExecutions: p } = tables;
  return db
    .select({ scheduleId: c.scheduleId, pipelineId: p.id })
    .from(c)
    .innerJoin(p, eq(p.id, c.pipelineExecutionId))
    .where(
      and(
        // Raw SQL: a uuid array parameter, which drizzle's inArray would expand into one parameter per id.
        sql`${c.scheduleId} = ANY(${arrayParam(encodeUuidList(scheduleIds))}::uuid[])`,
        sql`${c.status} = 'handed_off'`,
        statusIn(p.status, UNFINISHED_PIPELINE_STATUSES),
      ),
    );
}

/** The ids among `scheduleIds` with an active occurrence (see {@link selectActiveSchedules}); no read for none. */
export async function activeSchedulesOf(
  tx: PostgresDb,
  tables: PostgresTables,
  scheduleIds: readonly string[],
  includeBuffered = true,
): Promise<Set<string>> {
  if (scheduleIds.length === 0) return new Set();
  return new Set((await selectActiveSchedules(tx, tables, scheduleIds, includeBuffered)).rows.map((row) => row.id));
}

/** The unfinished pipelines of each of `scheduleIds` (see {@link selectActivePipelines}); no read for none. */
export async function activePipelinesOf(
  tx: PostgresDb,
  tables: PostgresTables,
  scheduleIds: readonly string[],
): Promise<Map<string, string[]>> {
  const pipelines = new Map<string, string[]>();
  if (scheduleIds.length === 0) return pipelines;
  for (const { scheduleId, pipelineId } of await selectActivePipelines(tx, tables, scheduleIds)) {
    const ids = pipelines.get(scheduleId);
    if (ids === undefined) pipelines.set(scheduleId, [pipelineId]);
    else ids.push(pipelineId);
  }
  return pipelines;
}

/** These schedules' ledger rows matching `condition` become `skipped`. */
function skipRows(db: PostgresDb, tables: PostgresTables, scheduleIds: readonly string[], condition: SQL) {
  const c = tables.cronExecutions;
  return db
    .update(c)
    .set({ status: 'skipped' })
    .where(
      and(
        // Raw SQL: a uuid array parameter, which drizzle's inArray would expand into one parameter per id.
        sql`${c.scheduleId} = ANY(${arrayParam(encodeUuidList(scheduleIds))}::uuid[])`,
        condition,
      ),
    );
}

/** buffer_one: the stored `buffered` rows of these schedules become `skipped` (a newer one replaces them). */
export function skipBufferedRows(db: PostgresDb, tables: PostgresTables, scheduleIds: readonly string[]) {
  return skipRows(db, tables, scheduleIds, isBuffered(tables));
}

/**
 * cancel_other: the stored `claimed` scheduler rows of these schedules become `skipped`, returned
 * to report: a newer occurrence replaces them before they started anything.
 */
export function skipClaimedRows(db: PostgresDb, tables: PostgresTables, scheduleIds: readonly string[]) {
  const condition = and(isClaimed(tables), statusIn(tables.cronExecutions.source, SCHEDULER_OCCURRENCE_SOURCES))!;
  return skipRows(db, tables, scheduleIds, condition).returning();
}

/**
 * cancel_other: the stored `claimed` scheduler rows of these schedules become `skipped`
 * (returned), and a pipeline already created under one's id but not linked yet (its runner is
 * between handoff and phase 2, or died there) is cancelled with them: nothing else would ever
 * cancel it.
 */
export async function skipReplacedClaims(
  tx: PostgresDb,
  tables: PostgresTables,
  scheduleIds: readonly string[],
  now: Date,
): Promise<CronExecutionRow[]> {
  const skipped = await skipClaimedRows(tx, tables, scheduleIds);
  if (skipped.length === 0) return skipped;
  const p = tables.pipelineExecutions;
  const keys = skipped.map((row) => row.id);
  const pipelines = await tx.select({ id: p.id }).from(p).where(inTextList(p.idempotencyKey, keys));
  for (const pipeline of pipelines) await cancelPipeline(tx, tables, pipeline.id, now);
  return skipped;
}

/**
 * pauseOnFailure: the newest pipeline of each of these schedules (none for a schedule that has
 * none), one step down the schedule's pipeline index per schedule.
 */
export function selectLatestPipelines(db: PostgresDb, tables: PostgresTables, scheduleIds: readonly string[]) {
  const { cronSchedules: s, pipelineExecutions: p } = tables;
  const latest = db
    .select({ id: p.id, status: p.status, completedAt: p.completedAt })
    .from(p)
    .where(eq(p.scheduleId, s.id))
    .orderBy(desc(p.createdAt))
    .limit(1)
    .as('latest');
  return db
    .select({ scheduleId: s.id, id: latest.id, status: latest.status, completedAt: latest.completedAt })
    .from(s)
    .crossJoinLateral(latest)
    .where(sql`${s.id} = ANY(${arrayParam(encodeUuidList(scheduleIds))}::uuid[])`);
}

/** The newest pipeline of each `pauseOnFailure` schedule among `due`, null for one that has none. */
async function latestPipelinesOf(
  tx: PostgresDb,
  tables: PostgresTables,
  due: readonly ScheduleRow[],
): Promise<Map<string, LatestSchedulePipeline | null>> {
  const watched = due.filter((schedule) => schedule.pauseOnFailure).map((schedule) => schedule.id);
  const latest = new Map<string, LatestSchedulePipeline | null>(watched.map((id) => [id, null]));
  if (watched.length === 0) return latest;
  for (const { scheduleId, ...pipeline } of await selectLatestPipelines(tx, tables, watched)) {
    latest.set(scheduleId, pipeline);
  }
  return latest;
}

/**
 * Non-manual ledger rows of `late` schedules scheduled in [from, missedBefore): one statement
 * over the schedule-time index.
 */
export function selectTakenSlots(
  db: PostgresDb,
  tables: PostgresTables,
  late: readonly ScheduleRow[],
  from: Date,
  missedBefore: Date,
) {
  const c = tables.cronExecutions;
  return db
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
}

/**
 * The slots in [nextRunAt, missedBefore) that already hold a non-manual ledger row, for each
 * schedule that may have missed slots (nextRunAt before missedBefore): a `missed` summary must
 * skip them. Nothing to read on a punctual tick.
 */
async function takenSlotsOf(
  tx: PostgresDb,
  tables: PostgresTables,
  due: readonly ScheduleRow[],
  missedBefore: Date | undefined,
): Promise<Map<string, Date[]>> {
  const taken = new Map<string, Date[]>();
  if (missedBefore === undefined) return taken;
  const late = due.filter((schedule) => schedule.nextRunAt !== null && schedule.nextRunAt < missedBefore);
  if (late.length === 0) return taken;
  for (const schedule of late) taken.set(schedule.id, []);
  const from = new Date(Math.min(...late.map((schedule) => schedule.nextRunAt!.getTime())));
  const rows = await selectTakenSlots(tx, tables, late, from, missedBefore);
  const nextRunAt = new Map(late.map((schedule) => [schedule.id, schedule.nextRunAt!.getTime()]));
  for (const row of rows) {
    if (row.scheduledTime.getTime() >= nextRunAt.get(row.scheduleId)!)
      taken.get(row.scheduleId)!.push(row.scheduledTime);
  }
  return taken;
}

/**
 * Advances planned schedules by compare-and-set on `version`, one statement for all of them;
 * returns the ids it advanced.
 */
export function advanceNextRunAt(db: PostgresDb, tables: PostgresTables, advances: readonly Advance[], at: Date) {
  const s = tables.cronSchedules;
  const iso = (date: Date | null) => (date === null ? null : dateToIso(date));
  // Raw SQL: rows from parallel arrays (unnest), which drizzle's builder cannot name as an UPDATE source.
  const source = sql`unnest(${arrayParam(encodeUuidList(advances.map((a) => a.schedule.id)))}::uuid[],
      ${arrayParam(advances.map((a) => a.schedule.version))}::int[], ${arrayParam(advances.map((a) => iso(a.nextRunAt)))}::timestamptz[],
      ${arrayParam(advances.map((a) => iso(a.lastRunAt)))}::timestamptz[],
      ${arrayParam(advances.map((a) => a.runCount ?? a.schedule.runCount))}::int[],
      ${arrayParam(advances.map((a) => a.disableNote ?? null))}::text[])
      AS v(id, version, next_run_at, last_run_at, run_count, disable_note)`;
  return db
    .update(s)
    .set({
      nextRunAt: sql`v.next_run_at`,
      lastRunAt: sql`v.last_run_at`,
      runCount: sql`v.run_count`,
      enabled: sql`CASE WHEN v.disable_note IS NULL THEN ${s.enabled} ELSE false END`,
      note: sql`coalesce(v.disable_note, ${s.note})`,
      version: sql`${s.version} + 1`,
      updatedAt: at,
    })
    .from(source)
    .where(and(sql`${s.id} = v.id`, sql`${s.version} = v.version`))
    .returning({ id: s.id });
}

/**
 * Claim + phase 1 (and the in-transaction handoff when asked), inside the caller's transaction
 * `tx`, begun with {@link WALK_DUE_INDEX_IN_ORDER}.
 */
export async function claimDueSchedules(
  tx: PostgresDb,
  tables: PostgresTables,
  insert: InsertPipelines,
  request: ClaimDueRequest,
): Promise<CronExecutionRow[]> {
  const due = await selectDueSchedules(tx, tables, request);
  if (due.length === 0) return [];
  // Read after the locks are held, on a snapshot that sees every claim committed before them.
  const waitIfActive = due.filter((schedule) => schedule.overlapPolicy !== 'allow').map((schedule) => schedule.id);
  const active = await activeSchedulesOf(tx, tables, waitIfActive);
  const cancelling = due.filter((schedule) => schedule.overlapPolicy === 'cancel_other' && active.has(schedule.id));
  const activePipelines = await activePipelinesOf(
    tx,
    tables,
    cancelling.map((schedule) => schedule.id),
  );
  const taken = await takenSlotsOf(tx, tables, due, request.missedBefore);
  const latestPipelines = await latestPipelinesOf(tx, tables, due);
  const plans = [];
  for (const schedule of due) {
    const takenSlots = taken.get(schedule.id);
    const pipelines = activePipelines.get(schedule.id);
    const latestPipeline = latestPipelines.get(schedule.id);
    const plan = request.plan(schedule, {
      hasActiveOccurrence: active.has(schedule.id),
      ...(takenSlots !== undefined && { takenSlots }),
      ...(pipelines !== undefined && { activePipelineIds: pipelines }),
      ...(latestPipeline !== undefined && { latestPipeline }),
    });
    if (plan !== null) plans.push({ schedule, ...plan });
  }
  const advanced =
    plans.length === 0
      ? new Set<string>()
      : new Set((await advanceNextRunAt(tx, tables, plans, request.now)).map((row) => row.id));
  // Cannot miss under the row locks; if it ever did, that schedule stays due and writes nothing.
  const landed = plans.filter((plan) => advanced.has(plan.schedule.id));
  const replaced = landed.filter((plan) => plan.skipBuffered === true).map((plan) => plan.schedule.id);
  if (replaced.length > 0) await skipBufferedRows(tx, tables, replaced);
  const superseded = landed.filter((plan) => plan.skipClaimed === true).map((plan) => plan.schedule.id);
  const skipped = superseded.length === 0 ? [] : await skipReplacedClaims(tx, tables, superseded, request.now);
  // cancel_other: the replaced pipelines end in this transaction, with the occurrence that replaces them.
  for (const id of landed.flatMap((plan) => plan.cancelPipelineIds ?? [])) {
    await cancelPipeline(tx, tables, id, request.now);
  }
  const occurrences = landed.flatMap((plan) => plan.occurrences.map(newCronExecutionRow));
  const { prepareHandoff } = request;
  const inserted =
    prepareHandoff === undefined
      ? await insertOccurrenceRows(tx, tables, occurrences)
      : await handOffInTransaction(tx, tables, insert, occurrences, prepareHandoff, request.now);
  return [...inserted.filter((row) => row.status === 'claimed' || row.status === 'handed_off'), ...skipped];
}
