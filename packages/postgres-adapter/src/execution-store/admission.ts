import {
  type AdmissionStep,
  admissionPlan,
  firstFullGroups,
  type GroupsAndHeads,
  isQueued,
  limitReachedError,
  type NewPipeline,
  type NewSlot,
  newSlots,
  type PipelineGroup,
  type PipelineRow,
  type QueuedGroup,
  replacedError,
  runStepsAsync,
  TERMINAL_PIPELINE_STATUSES,
} from '@orreryjs/core';
import { and, asc, desc, eq, type SQL, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { arrayParam, decodeJson, encodeUuidList, inUuidList, lockOf, statusIn, statusNotIn } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb } from '../transaction.js';
import { lockKeys, tryLockKey } from './conditions.js';
import { cancelPipeline } from './control.js';

/*
 * Concurrency groups: admitting queued pipelines while their groups have room. A group's
 * active pipelines are its admitted slots whose pipeline is not terminal, counted under the
 * group's advisory lock, so no two admissions anywhere see the same room.
 */

/** How many queued slots one read of a group's queue takes. */
const QUEUE_PAGE = 100;
/** How many of each group's queue the admission reads first: most admissions let in one or two per group. */
const QUEUE_HEAD = 2;

/**
 * Differs by necessity: SQLite's writers take turns (BEGIN IMMEDIATE), Postgres's take the
 * groups' advisory locks (see lockKeys), held until the transaction ends.
 */
export function lockGroups(db: PostgresDb, tables: PostgresTables, groups: readonly string[]) {
  return lockKeys(db, tables, 'concurrency', groups);
}

/** Differs by necessity (see {@link lockGroups}): a group outside the first set is tried, never waited for. */
export function tryLockGroup(db: PostgresDb, tables: PostgresTables, group: string) {
  return tryLockKey(db, tables, 'concurrency', group);
}

/** The groups with queued pipelines: what a periodic admission goes through. */
export function selectQueuedGroupNames(db: PostgresDb, { concurrencySlots: s }: PostgresTables) {
  return db.selectDistinct({ group: s.groupName }).from(s).where(sql`NOT ${s.admitted}`);
}

/**
 * The CTEs `ended`, which forgets the admitted slots of ended pipelines in the groups (no
 * longer active), and `active`, which counts each group's active pipelines without them (the
 * statement's snapshot still sees the deleted rows). Both walk the groups' active slots only,
 * however long their queues (a queued slot whose pipeline was cancelled is passed over by the
 * queue reads, and goes with its pipeline). Raw SQL: a DELETE in a CTE.
 */
function endedAndActive(tables: PostgresTables, inGroups: SQL) {
  const { concurrencySlots: s, pipelineExecutions: p } = tables;
  return sql`ended AS (
      DELETE FROM ${s} AS ended_slot USING ${p} AS ended_pipeline
      WHERE ended_slot.${inGroups} AND ended_slot.admitted AND ended_pipeline.id = ended_slot.pipeline_execution_id
        AND ended_pipeline.${statusIn(sql`status`, TERMINAL_PIPELINE_STATUSES)}
      RETURNING ended_slot.group_name, ended_slot.pipeline_execution_id
    ), active AS (
      SELECT slot.group_name, count(*)::int AS active FROM ${s} AS slot
      WHERE slot.${inGroups} AND slot.admitted AND NOT EXISTS (SELECT 1 FROM ended
        WHERE ended.group_name = slot.group_name AND ended.pipeline_execution_id = slot.pipeline_execution_id)
      GROUP BY slot.group_name
    )`;
}

/** Forgets the slots of ended pipelines in `groups`, then counts each group's active (admitted) pipelines. */
export function countActive(db: PostgresDb, tables: PostgresTables, groups: readonly string[]) {
  const inGroups = sql`group_name = ANY(${arrayParam([...groups])}::text[])`;
  return db.execute<{ group: string; active: number }>(
    sql`WITH ${endedAndActive(tables, inGroups)} SELECT group_name AS "group", active FROM active`,
  );
}

/** A row of {@link countActiveWithHeads}: a group's count (`active` set), or one pipeline at the head of its queue. */
type GroupStateRow = {
  group: string;
  active: number | null;
  pipeline_execution_id: string | null;
  slot_limit: number | null;
  concurrency: unknown;
};

/**
 * Differs by necessity: {@link countActive} and the first `perGroup` of each group's queue (one
 * index walk per group) in one statement, the first read of every admission, where SQLite reads
 * them in process with no round trip. Raw SQL: a LATERAL join over the groups, which drizzle's
 * builder has no form for.
 */
export function countActiveWithHeads(
  db: PostgresDb,
  tables: PostgresTables,
  groups: readonly string[],
  perGroup: number,
) {
  const { concurrencySlots: s, pipelineExecutions: p } = tables;
  const names = arrayParam([...groups]);
  const inGroups = sql`group_name = ANY(${names}::text[])`;
  return db.execute<GroupStateRow>(sql`WITH ${endedAndActive(tables, inGroups)}
    SELECT group_name AS "group", active, NULL::uuid AS pipeline_execution_id, NULL::int AS slot_limit,
      NULL::jsonb AS concurrency, 0 AS rank FROM active
    UNION ALL
    SELECT g.name, NULL, q.pipeline_execution_id, q.slot_limit, q.concurrency, q.rank
    FROM unnest(${names}::text[]) AS g(name)
    CROSS JOIN LATERAL (
      SELECT slot.pipeline_execution_id, slot.slot_limit, pipeline.concurrency,
        row_number() OVER (ORDER BY slot.priority DESC, slot.queued_at, slot.pipeline_execution_id) AS rank
      FROM ${s} AS slot JOIN ${p} AS pipeline ON pipeline.id = slot.pipeline_execution_id
      WHERE slot.group_name = g.name AND NOT slot.admitted AND pipeline.status = 'pending'
      ORDER BY slot.priority DESC, slot.queued_at, slot.pipeline_execution_id
      LIMIT ${perGroup}
    ) AS q
    ORDER BY 1, 6`);
}

/** {@link countActiveWithHeads}' rows as the admission plan takes them. */
async function readGroupsAndHeads(
  tx: PostgresDb,
  tables: PostgresTables,
  groups: readonly string[],
  perGroup: number,
): Promise<GroupsAndHeads> {
  const answer: GroupsAndHeads = { active: [], heads: [] };
  for (const row of (await countActiveWithHeads(tx, tables, groups, perGroup)).rows) {
    if (row.pipeline_execution_id === null) answer.active.push({ group: row.group, active: row.active ?? 0 });
    else {
      answer.heads.push({
        group: row.group,
        pipelineExecutionId: row.pipeline_execution_id,
        slotLimit: row.slot_limit ?? 0,
        concurrency: decodeJson(row.concurrency) as PipelineGroup[] | null,
      });
    }
  }
  return answer;
}

/** A page of a group's queue, in admission order, with each pipeline's groups. */
export function selectQueued(db: PostgresDb, tables: PostgresTables, group: string, offset: number) {
  const { concurrencySlots: s, pipelineExecutions: p } = tables;
  return db
    .select({ pipelineExecutionId: s.pipelineExecutionId, slotLimit: s.slotLimit, concurrency: p.concurrency })
    .from(s)
    .innerJoin(p, eq(p.id, s.pipelineExecutionId))
    .where(and(eq(s.groupName, group), sql`NOT ${s.admitted}`, sql`${p.status} = 'pending'`))
    .orderBy(desc(s.priority), asc(s.queuedAt), asc(s.pipelineExecutionId))
    .limit(QUEUE_PAGE)
    .offset(offset);
}

/**
 * Admits the pipelines: their slots count in every group they belong to from now on, and their
 * tasks without dependencies become ready, no earlier than their delay from now (their runAt
 * kept). One statement: the slots' update runs as a CTE.
 */
export function admitSlots(db: PostgresDb, tables: PostgresTables, ids: readonly string[], now: Date) {
  const { concurrencySlots: s, taskExecutions: t } = tables;
  const slots = db.$with('admitted_slots').as(
    db
      .update(s)
      .set({ admitted: true })
      .where(inUuidList(s.pipelineExecutionId, encodeUuidList(ids)))
      .returning({ pipelineExecutionId: s.pipelineExecutionId }),
  );
  return db
    .with(slots)
    .update(t)
    .set({
      status: 'ready',
      availableAt: sql`greatest(${t.availableAt}, ${sql.param(now, t.availableAt)}::timestamptz + ${t.delayMs} * interval '1 millisecond')`,
      updatedAt: now,
    })
    .where(
      and(
        inUuidList(t.pipelineExecutionId, encodeUuidList(ids)),
        sql`${t.status} = 'not_started'`,
        sql`${t.pendingDeps} = 0`,
      ),
    );
}

/** The group's oldest active pipeline: the one `cancel_in_progress` replaces. */
export function selectOldestActive(db: PostgresDb, tables: PostgresTables, group: string) {
  const { concurrencySlots: s, pipelineExecutions: p } = tables;
  return (
    db
      .select({ id: s.pipelineExecutionId })
      .from(s)
      .innerJoin(p, eq(p.id, s.pipelineExecutionId))
      .where(and(eq(s.groupName, group), sql`${s.admitted}`, statusNotIn(p.status, TERMINAL_PIPELINE_STATUSES)))
      .orderBy(asc(s.queuedAt), asc(s.pipelineExecutionId))
      .limit(1)
      // A pipeline whose last outcome is being committed holds its row and may wait for this group's
      // lock: passing it over (it is ending anyway) keeps the two from deadlocking.
      .for('update', { of: lockOf(p), skipLocked: true })
  );
}

/** Queues a pipeline in its groups (a new one, or a retried one again): its slots, not admitted. */
export function insertSlots(db: PostgresDb, { concurrencySlots: s }: PostgresTables, slots: readonly NewSlot[]) {
  return db
    .insert(s)
    .values(
      slots.map((slot) => ({
        groupName: slot.group.group,
        pipelineExecutionId: slot.pipelineExecutionId,
        slotLimit: slot.group.limit,
        priority: slot.priority,
        queuedAt: slot.queuedAt,
        admitted: false,
      })),
    )
    .onConflictDoUpdate({
      target: [s.groupName, s.pipelineExecutionId],
      set: { admitted: false, queuedAt: sql`excluded.queued_at`, slotLimit: sql`excluded.slot_limit` },
    });
}

/** The queued slots of these pipelines (still pending), with their group's active count (for `waitingFor`). */
export function selectQueuedGroups(db: PostgresDb, tables: PostgresTables, ids: readonly string[]) {
  const { concurrencySlots: s, pipelineExecutions: p } = tables;
  // Aliased, so that the correlated count below names the outer row unambiguously.
  const queued = alias(s, 'queued');
  // Raw SQL: a correlated count per row, which drizzle's builder cannot alias.
  const active = sql<number>`(SELECT count(*)::int FROM ${s} AS a JOIN ${p} AS ap ON ap.id = a.pipeline_execution_id
    WHERE a.group_name = ${queued.groupName} AND a.admitted AND ap.status NOT IN ('completed', 'failed', 'cancelled'))`;
  return db
    .select({
      pipelineExecutionId: queued.pipelineExecutionId,
      group: queued.groupName,
      limit: queued.slotLimit,
      active,
    })
    .from(queued)
    .innerJoin(p, eq(p.id, queued.pipelineExecutionId))
    .where(
      and(
        inUuidList(queued.pipelineExecutionId, encodeUuidList(ids)),
        sql`NOT ${queued.admitted}`,
        sql`${p.status} = 'pending'`,
      ),
    );
}

/** Occupancy per group of unfinished pipelines, of one workflow or (null) all. */
export function selectGroupOccupancy(db: PostgresDb, tables: PostgresTables, workflowName: string | null) {
  const { concurrencySlots: s, pipelineExecutions: p } = tables;
  return db
    .select({
      group: s.groupName,
      workflowName: p.workflowName,
      // Raw SQL: conditional counts, which drizzle's builder has no function for.
      active: sql<number>`count(*) FILTER (WHERE ${s.admitted})::int`,
      queued: sql<number>`count(*) FILTER (WHERE NOT ${s.admitted})::int`,
      limit: sql<number>`max(${s.slotLimit})`,
    })
    .from(s)
    .innerJoin(p, eq(p.id, s.pipelineExecutionId))
    .where(
      and(
        statusNotIn(p.status, TERMINAL_PIPELINE_STATUSES),
        workflowName === null ? undefined : eq(p.workflowName, workflowName),
      ),
    )
    .groupBy(p.workflowName, s.groupName)
    .orderBy(asc(p.workflowName), asc(s.groupName));
}

/**
 * Admits the queued pipelines of `groups` (every group with a queue when null) inside `tx`:
 * locks the groups, forgets ended pipelines' slots, counts, and admits in order while room
 * lasts (see ExecutionStore.admitQueued). Returns the ids admitted.
 */
export async function admitQueuedIn(
  tx: PostgresDb,
  tables: PostgresTables,
  groups: readonly string[] | null,
  now: Date,
): Promise<string[]> {
  const names = [...new Set(groups ?? (await selectQueuedGroupNames(tx, tables)).map((row) => row.group))].sort();
  if (names.length === 0) return [];
  await lockGroups(tx, tables, names);
  const admitted = await runStepsAsync(admissionPlan(names, QUEUE_HEAD, QUEUE_PAGE), async (step: AdmissionStep) => {
    switch (step.kind) {
      case 'countActive':
        return (await countActive(tx, tables, step.groups)).rows;
      case 'countActiveWithHeads':
        return readGroupsAndHeads(tx, tables, step.groups, step.perGroup);
      case 'queuePage':
        return selectQueued(tx, tables, step.group, step.offset);
      case 'tryLock':
        return tryLockGroup(tx, tables, step.group).then(({ rows }) => rows[0]?.locked === true);
    }
  });
  if (admitted.length > 0) {
    await admitSlots(tx, tables, admitted, now);
  }
  return admitted;
}

/** The first full group of each queued pipeline among `ids`. */
export async function queuedGroupsOf(
  db: PostgresDb,
  tables: PostgresTables,
  ids: readonly string[],
): Promise<QueuedGroup[]> {
  if (ids.length === 0) return [];
  return firstFullGroups(await selectQueuedGroups(db, tables, ids));
}

/**
 * Queues new pipelines in their groups inside the creating transaction `tx`, admits what fits,
 * and applies `onLimit` to those a full group holds back: `cancel_newest` cancels the new
 * pipeline, `cancel_in_progress` cancels the group's oldest active one and admits again.
 * Returns the ids of the pipelines whose row changed (cancelled, new or old).
 */
export async function queueNewPipelines(
  tx: PostgresDb,
  tables: PostgresTables,
  created: readonly NewPipeline[],
  now: Date,
): Promise<string[]> {
  const slots = created.flatMap(newSlots);
  if (slots.length === 0) return [];
  await insertSlots(tx, tables, slots);
  const groups = [...new Set(slots.map((slot) => slot.group.group))];
  const admitted = new Set(await admitQueuedIn(tx, tables, groups, now));
  const changed: string[] = [];
  // Only a rule that does not queue acts on a pipeline its full group holds back.
  const actsOnLimit = created.some((pipeline) => pipeline.concurrency?.some((group) => group.onLimit !== 'queue'));
  for (const pipeline of actsOnLimit ? created : []) {
    if (!isQueued(pipeline) || admitted.has(pipeline.id)) continue;
    const counted = (await countActive(tx, tables, groups)).rows;
    const active = new Map(counted.map((row) => [row.group, Number(row.active)]));
    const full = pipeline.concurrency.find(
      (group) => group.onLimit !== 'queue' && (active.get(group.group) ?? 0) >= group.limit,
    );
    if (full === undefined) continue;
    if (full.onLimit === 'cancel_newest') {
      await cancelPipeline(tx, tables, pipeline.id, now, limitReachedError(full.group));
      changed.push(pipeline.id);
      continue;
    }
    const [oldest] = await selectOldestActive(tx, tables, full.group);
    if (oldest === undefined) continue;
    await cancelPipeline(tx, tables, oldest.id, now, replacedError(full.group));
    changed.push(oldest.id);
    for (const id of await admitQueuedIn(tx, tables, [full.group], now)) admitted.add(id);
  }
  return changed;
}

/** Puts a retried pipeline of concurrency groups back in their queues inside `tx`, and admits what fits. */
export async function requeueRetried(
  tx: PostgresDb,
  tables: PostgresTables,
  pipeline: PipelineRow,
  now: Date,
): Promise<void> {
  if (pipeline.concurrency === null || pipeline.status !== 'pending') return;
  const groups = pipeline.concurrency.map((group) => group.group);
  // The groups first: an admission holding one of them may be forgetting this pipeline's old slots.
  await lockGroups(tx, tables, groups);
  await insertSlots(
    tx,
    tables,
    pipeline.concurrency.map((group) => ({
      pipelineExecutionId: pipeline.id,
      group,
      priority: pipeline.priority,
      queuedAt: now,
    })),
  );
  await admitQueuedIn(tx, tables, groups, now);
}
