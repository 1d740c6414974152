import {
  type ActiveCount,
  type AdmissionStep,
  admissionPlan,
  firstFullGroups,
  type GroupsAndHeads,
  isQueued,
  limitReachedError,
  type NewPipeline,
  type NewSlot,
  newSlots,
  type PipelineRow,
  type QueuedGroup,
  type QueueHead,
  replacedError,
  runSteps,
  TERMINAL_PIPELINE_STATUSES,
} from '@orreryjs/core';
import { and, asc, count, desc, eq, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/sqlite-core';
import { bind, encodeTextList, encodeUuidList, statusIn, statusNotIn, textListSql, uuidListSql } from '../codec.js';
import type { SqliteHandle } from '../transaction.js';
import { cancelPipeline } from './control.js';

/*
 * Concurrency groups: admitting queued pipelines while their groups have room. A group's
 * active pipelines are its admitted slots whose pipeline is not terminal, counted inside the
 * writer's BEGIN IMMEDIATE transaction, so no two admissions see the same room.
 */

/** How many queued slots one read of a group's queue takes. */
const QUEUE_PAGE = 100;
/** How many of each group's queue the admission reads first: most admissions let in one or two per group. */
const QUEUE_HEAD = 2;

/** Prepares the admission statements once on the connection. */
export function prepareAdmission({ db, tables }: SqliteHandle) {
  const { concurrencySlots: s, pipelineExecutions: p, taskExecutions: t } = tables;
  const inGroups = sql`${s.groupName} IN ${textListSql(sql.placeholder('groups'))}`;
  const ofPipelines = (column: unknown) => sql`${column} IN ${uuidListSql(sql.placeholder('ids'))}`;
  // Aliased, so that the correlated count of selectQueuedGroups names the outer row unambiguously.
  const queued = alias(s, 'queued');
  return {
    // The groups with queued pipelines: what a periodic admission goes through.
    selectQueuedGroupNames: db.selectDistinct({ group: s.groupName }).from(s).where(sql`NOT ${s.admitted}`).prepare(),
    // Forgets the admitted slots of ended pipelines (no longer active), then counts each group's active
    // pipelines: both walk the active slots only, however long the queue. Differs by necessity: no DELETE in a CTE, so two statements where Postgres sends one.
    countActive: [
      db
        .delete(s)
        .where(
          and(
            inGroups,
            sql`${s.admitted}`,
            sql`${s.pipelineExecutionId} IN (SELECT ${p.id} FROM ${p} WHERE ${p.id} = ${s.pipelineExecutionId}
              AND ${statusIn(p.status, TERMINAL_PIPELINE_STATUSES)})`,
          ),
        )
        .prepare(),
      db
        .select({ group: s.groupName, active: count() })
        .from(s)
        .where(and(inGroups, sql`${s.admitted}`))
        .groupBy(s.groupName)
        .prepare(),
    ] as const,
    // A page of a group's queue, in admission order, with each pipeline's groups.
    selectQueued: db
      .select({ pipelineExecutionId: s.pipelineExecutionId, slotLimit: s.slotLimit, concurrency: p.concurrency })
      .from(s)
      .innerJoin(p, eq(p.id, s.pipelineExecutionId))
      .where(and(eq(s.groupName, bind(s.groupName, 'group')), sql`NOT ${s.admitted}`, sql`${p.status} = 'pending'`))
      .orderBy(desc(s.priority), asc(s.queuedAt), asc(s.pipelineExecutionId))
      .limit(sql.placeholder('limit'))
      .offset(sql.placeholder('offset'))
      .prepare(),
    // Admits the pipelines: their slots count in every group they belong to from now on, and their tasks
    // without dependencies become ready, no earlier than their delay from now (their runAt kept).
    // Differs by necessity: no UPDATE in a CTE, so two statements where Postgres sends one.
    admitSlots: [
      db.update(s).set({ admitted: true }).where(ofPipelines(s.pipelineExecutionId)).prepare(),
      db
        .update(t)
        .set({
          status: 'ready',
          availableAt: sql`max(${t.availableAt}, ${bind(t.availableAt, 'now')} + ${t.delayMs})`,
          updatedAt: bind(t.updatedAt, 'now'),
        })
        .where(and(ofPipelines(t.pipelineExecutionId), sql`${t.status} = 'not_started'`, sql`${t.pendingDeps} = 0`))
        .prepare(),
    ] as const,
    // The group's oldest active pipeline: the one cancel_in_progress replaces.
    selectOldestActive: db
      .select({ id: s.pipelineExecutionId })
      .from(s)
      .innerJoin(p, eq(p.id, s.pipelineExecutionId))
      .where(
        and(
          eq(s.groupName, bind(s.groupName, 'group')),
          sql`${s.admitted}`,
          statusNotIn(p.status, TERMINAL_PIPELINE_STATUSES),
        ),
      )
      .orderBy(asc(s.queuedAt), asc(s.pipelineExecutionId))
      .limit(1)
      .prepare(),
    // Queues a pipeline in one group (a new one, or a retried one again). Differs by necessity: one row per statement.
    insertSlots: db
      .insert(s)
      .values({
        groupName: bind(s.groupName, 'group'),
        pipelineExecutionId: bind(s.pipelineExecutionId, 'pipelineExecutionId'),
        slotLimit: bind(s.slotLimit, 'limit'),
        priority: bind(s.priority, 'priority'),
        queuedAt: bind(s.queuedAt, 'queuedAt'),
        admitted: false,
      })
      .onConflictDoUpdate({
        target: [s.groupName, s.pipelineExecutionId],
        set: { admitted: false, queuedAt: sql`excluded.queued_at`, slotLimit: sql`excluded.slot_limit` },
      })
      .prepare(),
    // The queued slots of these pipelines (still pending), with their group's active count (for waitingFor).
    selectQueuedGroups: db
      .select({
        pipelineExecutionId: queued.pipelineExecutionId,
        group: queued.groupName,
        limit: queued.slotLimit,
        // Raw SQL: a correlated count per row, which drizzle's builder cannot alias.
        active: sql<number>`(SELECT count(*) FROM ${s} AS a JOIN ${p} AS ap ON ap.id = a.pipeline_execution_id
          WHERE a.group_name = ${queued.groupName} AND a.admitted AND ap.status NOT IN ('completed', 'failed', 'cancelled'))`,
      })
      .from(queued)
      .innerJoin(p, eq(p.id, queued.pipelineExecutionId))
      .where(and(ofPipelines(queued.pipelineExecutionId), sql`NOT ${queued.admitted}`, sql`${p.status} = 'pending'`))
      .prepare(),
    // Occupancy per group of unfinished pipelines, of one workflow or (null) all.
    selectGroupOccupancy: db
      .select({
        group: s.groupName,
        workflowName: p.workflowName,
        // Raw SQL: conditional counts, which drizzle's builder has no function for.
        active: sql<number>`count(*) FILTER (WHERE ${s.admitted})`,
        queued: sql<number>`count(*) FILTER (WHERE NOT ${s.admitted})`,
        limit: sql<number>`max(${s.slotLimit})`,
      })
      .from(s)
      .innerJoin(p, eq(p.id, s.pipelineExecutionId))
      .where(
        and(
          statusNotIn(p.status, TERMINAL_PIPELINE_STATUSES),
          sql`(${bind(p.workflowName, 'workflowName')} IS NULL OR ${p.workflowName} = ${bind(p.workflowName, 'workflowName')})`,
        ),
      )
      .groupBy(p.workflowName, s.groupName)
      .orderBy(asc(p.workflowName), asc(s.groupName))
      .prepare(),
  };
}

export type AdmissionStatements = ReturnType<typeof prepareAdmission>;

/** What queueing new pipelines runs: the admission statements, and the pipeline and control statements of a cancel. */
export type QueueStatements = Parameters<typeof cancelPipeline>[0] & { admission: AdmissionStatements };

/** Forgets the slots of ended pipelines in `groups`, then counts each group's active pipelines. */
function countActive(q: AdmissionStatements, groups: readonly string[]): ActiveCount[] {
  const [deleteEndedSlots, countAdmitted] = q.countActive;
  const list = encodeTextList(groups);
  deleteEndedSlots.run({ groups: list });
  return countAdmitted.all({ groups: list });
}

/** Queues a pipeline's slots (not admitted). */
function insertSlots(q: AdmissionStatements, slots: readonly NewSlot[]): void {
  for (const slot of slots) {
    q.insertSlots.run({
      group: slot.group.group,
      pipelineExecutionId: slot.pipelineExecutionId,
      limit: slot.group.limit,
      priority: slot.priority,
      queuedAt: slot.queuedAt,
    });
  }
}

/**
 * Admits the queued pipelines of `groups` (every group with a queue when null) inside the
 * caller's write transaction (see ExecutionStore.admitQueued). Returns the ids admitted.
 */
export function admitQueuedIn(q: AdmissionStatements, groups: readonly string[] | null, now: Date): string[] {
  const names = [...new Set(groups ?? q.selectQueuedGroupNames.all().map((row) => row.group))].sort();
  if (names.length === 0) return [];
  // Differs by necessity: no lockGroups; the writer's BEGIN IMMEDIATE already holds every group.
  const admitted = runSteps(admissionPlan(names, QUEUE_HEAD, QUEUE_PAGE), (step: AdmissionStep) => {
    switch (step.kind) {
      case 'countActive':
        return countActive(q, step.groups);
      case 'countActiveWithHeads':
        // Differs by necessity: the counts and each group's head read in process (no round trip), no countActiveWithHeads.
        return {
          active: countActive(q, step.groups),
          heads: step.groups.flatMap((group) =>
            q.selectQueued
              .all({ group, offset: 0, limit: step.perGroup })
              .map((slot): QueueHead => ({ ...slot, group })),
          ),
        } satisfies GroupsAndHeads;
      case 'queuePage':
        return q.selectQueued.all({ group: step.group, offset: step.offset, limit: QUEUE_PAGE });
      case 'tryLock':
        return true;
    }
  });
  if (admitted.length > 0) {
    const ids = encodeUuidList(admitted);
    const [admitSlots, readyFirstTasks] = q.admitSlots;
    admitSlots.run({ ids });
    readyFirstTasks.run({ ids, now });
  }
  return admitted;
}

/** The first full group of each queued pipeline among `ids`. */
export function queuedGroupsOf(q: AdmissionStatements, ids: readonly string[]): QueuedGroup[] {
  if (ids.length === 0) return [];
  return firstFullGroups(q.selectQueuedGroups.all({ ids: encodeUuidList(ids) }));
}

/**
 * Queues new pipelines in their groups inside the creating transaction, admits what fits,
 * and applies `onLimit` to those a full group holds back: `cancel_newest` cancels the new
 * pipeline, `cancel_in_progress` cancels the group's oldest active one and admits again.
 * Returns the ids of the pipelines whose row changed (cancelled, new or old).
 */
function queueNewPipelines(q: QueueStatements, created: readonly NewPipeline[], now: Date): string[] {
  const slots = created.flatMap(newSlots);
  if (slots.length === 0) return [];
  insertSlots(q.admission, slots);
  const groups = [...new Set(slots.map((slot) => slot.group.group))];
  const admitted = new Set(admitQueuedIn(q.admission, groups, now));
  const changed: string[] = [];
  // Only a rule that does not queue acts on a pipeline its full group holds back.
  const actsOnLimit = created.some((pipeline) => pipeline.concurrency?.some((group) => group.onLimit !== 'queue'));
  for (const pipeline of actsOnLimit ? created : []) {
    if (!isQueued(pipeline) || admitted.has(pipeline.id)) continue;
    const active = new Map(countActive(q.admission, groups).map((row) => [row.group, Number(row.active)]));
    const full = pipeline.concurrency.find(
      (group) => group.onLimit !== 'queue' && (active.get(group.group) ?? 0) >= group.limit,
    );
    if (full === undefined) continue;
    if (full.onLimit === 'cancel_newest') {
      cancelPipeline(q, pipeline.id, now, limitReachedError(full.group));
      changed.push(pipeline.id);
      continue;
    }
    const oldest = q.admission.selectOldestActive.get({ group: full.group });
    if (oldest === undefined) continue;
    cancelPipeline(q, oldest.id, now, replacedError(full.group));
    changed.push(oldest.id);
    for (const id of admitQueuedIn(q.admission, [full.group], now)) admitted.add(id);
  }
  return changed;
}

/** Puts a retried pipeline of concurrency groups back in their queues, and admits what fits. */
export function requeueRetried(q: AdmissionStatements, pipeline: PipelineRow, now: Date): void {
  if (pipeline.concurrency === null || pipeline.status !== 'pending') return;
  insertSlots(
    q,
    pipeline.concurrency.map((group) => ({
      pipelineExecutionId: pipeline.id,
      group,
      priority: pipeline.priority,
      queuedAt: now,
    })),
  );
  admitQueuedIn(
    q,
    pipeline.concurrency.map((group) => group.group),
    now,
  );
}

/**
 * Queues the pipelines of concurrency groups that `createPipelineIn` just created (see
 * {@link queueNewPipelines}) and returns the results with the rows an onLimit rule cancelled
 * read again, so that the caller sees them cancelled.
 */
export function queueCreated(
  q: QueueStatements,
  requests: readonly NewPipeline[],
  results: Array<{ pipeline: PipelineRow; created: boolean }>,
): Array<{ pipeline: PipelineRow; created: boolean }> {
  const created = requests.filter((request, index) => results[index]!.created && isQueued(request));
  if (created.length === 0) return results;
  const changed = new Set(queueNewPipelines(q, created, created[0]!.now));
  return results.map((result) =>
    result.created && changed.has(result.pipeline.id)
      ? { ...result, pipeline: q.pipelines.selectPipeline.get({ id: result.pipeline.id }) ?? result.pipeline }
      : result,
  );
}
