import {
  type ClaimDueRequest,
  type CronExecutionRow,
  type LatestSchedulePipeline,
  newCronExecutionRow,
  SCHEDULER_OCCURRENCE_SOURCES,
  type ScheduleRow,
  UNFINISHED_PIPELINE_STATUSES,
} from '@orreryjs/core';
import { and, asc, desc, eq, gte, lt, lte, sql } from 'drizzle-orm';
import { bind, encodeTextList, statusIn, textListSql } from '../codec.js';
import type { AdmissionStatements } from '../execution-store/admission.js';
import { type ControlStatements, cancelPipeline } from '../execution-store/control.js';
import type { PipelineStatements } from '../execution-store/pipelines.js';
import type { SqliteHandle } from '../transaction.js';
import { isBuffered, isClaimed, isEnabled } from './conditions.js';
import { type HandoffStatements, handOffInTransaction } from './handoff.js';
import { insertOccurrenceRows, type LedgerStatements } from './ledger.js';

/*
 * Claim + phase 1, one transaction: take the due schedules (BEGIN IMMEDIATE holds the write
 * lock, so tickers take turns), plan each, advance `next_run_at` by compare-and-set on
 * `version`, and write the occurrences' ledger rows. With an in-transaction handoff the
 * pipelines and links commit too.
 */

/** Prepares the claim statements once on the connection. */
export function prepareClaim({ db, tables }: SqliteHandle) {
  const { cronSchedules: s, cronExecutions: c, pipelineExecutions: p } = tables;
  const placeholder = sql.placeholder;
  // Two probes that cost what is in flight, not the schedule's history: its `claimed` rows through the
  // recovery index, and the active cron pipelines (CROSS JOIN fixes them as the outer loop), whose
  // idempotency key is their occurrence's id (DESIGN: the handoff uses the row id as the key), each
  // checked against its ledger row by primary key. A unary `+` keeps SQLite off the history index.
  const selectActiveSchedule = db
    .select({
      // Raw SQL with aliases: drizzle leaves column names unqualified in a select list, which the subqueries' tables would capture.
      active: sql<number>`EXISTS (SELECT 1 FROM ${c} ce
            WHERE ce.status = 'claimed' AND +ce.schedule_id = ${bind(c.scheduleId, 'scheduleId')})
          OR EXISTS (SELECT 1 FROM ${p} pe
            CROSS JOIN ${c} ce ON ce.id = unhex(replace(pe.idempotency_key, '-', ''))
            WHERE ${statusIn(sql`pe.status`, UNFINISHED_PIPELINE_STATUSES)} AND pe.scheduled_time IS NOT NULL
              AND +ce.schedule_id = ${bind(c.scheduleId, 'scheduleId')} AND ce.status = 'handed_off'
              AND ce.pipeline_execution_id = pe.id)`,
    })
    .from(s)
    .where(eq(s.id, bind(s.id, 'scheduleId')))
    .prepare();
  // A buffered occurrence is active too, for the next one's overlap decision (through the buffered index).
  const selectHasBuffered = db
    .select({ id: c.id })
    .from(c)
    .where(and(eq(c.scheduleId, bind(c.scheduleId, 'scheduleId')), isBuffered(tables)))
    .limit(1)
    .prepare();
  return {
    selectDueSchedules: db
      .select()
      .from(s)
      .where(
        and(
          isEnabled(tables),
          lte(s.nextRunAt, bind(s.nextRunAt, 'now')),
          sql`${s.workflowName} IN ${textListSql(placeholder('workflows'))}`,
        ),
      )
      .orderBy(asc(s.nextRunAt))
      .limit(placeholder('limit'))
      .prepare(),
    // Differs by necessity: a probe per schedule (no unnest of ids), and the buffered probe apart so that
    // releaseBuffered can run the first alone (a buffered row is not itself what it waits for).
    selectActiveSchedules: [selectActiveSchedule, selectHasBuffered] as const,
    // cancel_other: the unfinished pipelines of the schedule's handed-off occurrences, which a new one replaces.
    selectActivePipelines: db
      .select({ pipelineId: p.id })
      .from(c)
      .innerJoin(p, eq(p.id, c.pipelineExecutionId))
      .where(
        and(
          eq(c.scheduleId, bind(c.scheduleId, 'scheduleId')),
          sql`${c.status} = 'handed_off'`,
          statusIn(p.status, UNFINISHED_PIPELINE_STATUSES),
        ),
      )
      .prepare(),
    // cancel_other: a newer occurrence replaces the scheduler's stored claimed ones before they start anything;
    // the unary `+` keeps SQLite on the recovery index (what is in flight), off the schedule's history.
    skipClaimedRows: db
      .update(c)
      .set({ status: 'skipped' })
      .where(
        and(
          isClaimed(tables),
          sql`+${c.scheduleId} = ${bind(c.scheduleId, 'scheduleId')}`,
          statusIn(c.source, SCHEDULER_OCCURRENCE_SOURCES),
        ),
      )
      .returning()
      .prepare(),
    // pauseOnFailure: the schedule's newest pipeline, one step down the schedule's pipeline index.
    selectLatestPipelines: db
      .select({ id: p.id, status: p.status, completedAt: p.completedAt })
      .from(p)
      .where(eq(p.scheduleId, bind(p.scheduleId, 'scheduleId')))
      .orderBy(desc(p.createdAt))
      .limit(1)
      .prepare(),
    // buffer_one: a newer occurrence replaces the stored buffered one.
    skipBufferedRows: db
      .update(c)
      .set({ status: 'skipped' })
      .where(and(eq(c.scheduleId, bind(c.scheduleId, 'scheduleId')), isBuffered(tables)))
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
    advanceNextRunAt: db
      .update(s)
      .set({
        nextRunAt: bind(s.nextRunAt, 'nextRunAt'),
        lastRunAt: bind(s.lastRunAt, 'lastRunAt'),
        runCount: bind(s.runCount, 'runCount'),
        enabled: sql`CASE WHEN ${bind(s.note, 'disableNote')} IS NULL THEN ${s.enabled} ELSE 0 END`,
        note: sql`coalesce(${bind(s.note, 'disableNote')}, ${s.note})`,
        version: sql`${s.version} + 1`,
        updatedAt: bind(s.updatedAt, 'now'),
      })
      .where(and(eq(s.id, bind(s.id, 'id')), eq(s.version, placeholder('version'))))
      .prepare(),
  };
}

export type ClaimStatements = ReturnType<typeof prepareClaim>;

/** The statements claim + phase 1 (and the in-transaction handoff) run. */
export interface ClaimDueStatements {
  claim: ClaimStatements;
  ledger: LedgerStatements;
  handoff: HandoffStatements;
  pipelines: PipelineStatements;
  control: ControlStatements;
  admission: AdmissionStatements;
}

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
 * The ids among `scheduleIds` with an active occurrence: a `claimed` (or, with
 * `includeBuffered`, `buffered`) ledger row, or a `handed_off` one whose pipeline is unfinished.
 * Differs by necessity: row-at-a-time, the prepared probes once per schedule (no array to unnest).
 */
export function activeSchedulesOf(
  q: ClaimStatements,
  scheduleIds: readonly string[],
  includeBuffered = true,
): Set<string> {
  const [selectActiveSchedule, selectHasBuffered] = q.selectActiveSchedules;
  return new Set(
    scheduleIds.filter(
      (scheduleId) =>
        selectActiveSchedule.get({ scheduleId })?.active === 1 ||
        (includeBuffered && selectHasBuffered.get({ scheduleId }) !== undefined),
    ),
  );
}

/**
 * The unfinished pipelines of the `handed_off` occurrences of each of `scheduleIds`: what a
 * `cancel_other` schedule's new occurrence replaces. Differs by necessity: one read per schedule.
 */
export function activePipelinesOf(q: ClaimStatements, scheduleIds: readonly string[]): Map<string, string[]> {
  const pipelines = new Map<string, string[]>();
  for (const scheduleId of scheduleIds) {
    const rows = q.selectActivePipelines.all({ scheduleId });
    if (rows.length > 0)
      pipelines.set(
        scheduleId,
        rows.map((row) => row.pipelineId),
      );
  }
  return pipelines;
}

/** The newest pipeline of each `pauseOnFailure` schedule among `due`, null for one that has none. */
function latestPipelinesOf(
  q: ClaimStatements,
  due: readonly ScheduleRow[],
): Map<string, LatestSchedulePipeline | null> {
  const latest = new Map<string, LatestSchedulePipeline | null>();
  // Differs by necessity: one step down the schedule's pipeline index per schedule (no lateral join over an array).
  for (const schedule of due) {
    if (schedule.pauseOnFailure)
      latest.set(schedule.id, q.selectLatestPipelines.get({ scheduleId: schedule.id }) ?? null);
  }
  return latest;
}

/**
 * The slots in [nextRunAt, missedBefore) that already hold a non-manual ledger row, for each
 * schedule that may have missed slots (nextRunAt before missedBefore): a `missed` summary must
 * skip them. Nothing to read on a punctual tick. Differs by necessity: one read per late schedule.
 */
function takenSlotsOf(
  q: ClaimStatements,
  due: readonly ScheduleRow[],
  missedBefore: Date | undefined,
): Map<string, Date[]> {
  const taken = new Map<string, Date[]>();
  if (missedBefore === undefined) return taken;
  for (const schedule of due) {
    if (schedule.nextRunAt === null || schedule.nextRunAt >= missedBefore) continue;
    const rows = q.selectTakenSlots.all({ scheduleId: schedule.id, from: schedule.nextRunAt, missedBefore });
    taken.set(
      schedule.id,
      rows.map((row) => row.scheduledTime),
    );
  }
  return taken;
}

/**
 * Advances planned schedules by compare-and-set on `version`; returns the ids it advanced.
 * Differs by necessity: the prepared update runs once per schedule (no array to unnest).
 */
function advanceNextRunAt(q: ClaimStatements, advances: readonly Advance[], at: Date): Set<string> {
  const advanced = new Set<string>();
  for (const a of advances) {
    const result = q.advanceNextRunAt.run({
      id: a.schedule.id,
      version: a.schedule.version,
      nextRunAt: a.nextRunAt,
      lastRunAt: a.lastRunAt,
      runCount: a.runCount ?? a.schedule.runCount,
      disableNote: a.disableNote ?? null,
      now: at,
    });
    if (result.changes > 0) advanced.add(a.schedule.id);
  }
  return advanced;
}

/**
 * cancel_other: the schedule's stored `claimed` scheduler rows become `skipped` (returned), and a
 * pipeline already created under one's id but not linked yet (its runner is between handoff and
 * phase 2, or died there) is cancelled with them: nothing else would ever cancel it.
 */
export function skipReplacedClaims(
  q: { claim: ClaimStatements; control: ControlStatements; pipelines: PipelineStatements },
  scheduleId: string,
  now: Date,
): CronExecutionRow[] {
  const skipped = q.claim.skipClaimedRows.all({ scheduleId });
  for (const row of skipped) {
    const pipeline = q.pipelines.selectPipelineByKey.get({ key: row.id });
    if (pipeline !== undefined) cancelPipeline(q, pipeline.id, now);
  }
  return skipped;
}

/** Claim + phase 1 (and the in-transaction handoff when asked), inside the caller's write transaction. */
export function claimDueSchedules(q: ClaimDueStatements, request: ClaimDueRequest): CronExecutionRow[] {
  const due = q.claim.selectDueSchedules.all({
    now: request.now,
    workflows: encodeTextList(request.workflowNames),
    limit: request.limit,
  });
  if (due.length === 0) return [];
  // Read inside BEGIN IMMEDIATE: every claim committed before is seen, and none commits meanwhile.
  const waitIfActive = due.filter((schedule) => schedule.overlapPolicy !== 'allow').map((schedule) => schedule.id);
  const active = activeSchedulesOf(q.claim, waitIfActive);
  const cancelling = due.filter((schedule) => schedule.overlapPolicy === 'cancel_other' && active.has(schedule.id));
  const activePipelines = activePipelinesOf(
    q.claim,
    cancelling.map((schedule) => schedule.id),
  );
  const taken = takenSlotsOf(q.claim, due, request.missedBefore);
  const latestPipelines = latestPipelinesOf(q.claim, due);
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
  const advanced = advanceNextRunAt(q.claim, plans, request.now);
  // Cannot miss under BEGIN IMMEDIATE; if it ever did, that schedule stays due and writes nothing.
  const landed = plans.filter((plan) => advanced.has(plan.schedule.id));
  for (const plan of landed) {
    if (plan.skipBuffered === true) q.claim.skipBufferedRows.run({ scheduleId: plan.schedule.id });
  }
  const skipped = landed
    .filter((plan) => plan.skipClaimed === true)
    .flatMap((plan) => skipReplacedClaims(q, plan.schedule.id, request.now));
  // cancel_other: the replaced pipelines end in this transaction, with the occurrence that replaces them.
  for (const id of landed.flatMap((plan) => plan.cancelPipelineIds ?? [])) cancelPipeline(q, id, request.now);
  const occurrences = landed.flatMap((plan) => plan.occurrences.map(newCronExecutionRow));
  const { prepareHandoff } = request;
  const inserted =
    prepareHandoff === undefined
      ? insertOccurrenceRows(q.ledger, occurrences)
      : handOffInTransaction(q.handoff, q.ledger, q, occurrences, prepareHandoff, request.now);
  return [...inserted.filter((row) => row.status === 'claimed' || row.status === 'handed_off'), ...skipped];
}
