import type { CronExecutionRow, NewPipeline } from '@orreryjs/core';
import { and, eq, sql } from 'drizzle-orm';
import { arrayParam, bind, encodeUuidList } from '../codec.js';
import { createPipelinesIn, type InsertPipelines, prepareInsertPipelines } from '../execution-store/pipelines.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb, PostgresHandle } from '../transaction.js';
import { isClaimed } from './conditions.js';

/*
 * Handoff, phase 2: a `claimed` row becomes `handed_off` with its pipeline's id, either after
 * the executor started the pipeline (two-phase) or inside the claim transaction.
 */

/** Builds the handoff statements once; each is named, so each connection parses it once. */
export function prepareHandoff(handle: PostgresHandle) {
  const { db, tables, named } = handle;
  const c = tables.cronExecutions;
  return {
    /** The in-transaction handoff's pipelines: the same statement as `createPipelines`. */
    insertPipelines: prepareInsertPipelines(handle),
    linkOccurrence: db
      .update(c)
      .set({
        status: 'handed_off',
        pipelineExecutionId: bind(c.pipelineExecutionId, 'pipelineId'),
        handedOffAt: bind(c.handedOffAt, 'now'),
        recoveryLeaseOwner: null,
        recoveryLeaseExpiresAt: null,
      })
      .where(and(eq(c.id, bind(c.id, 'id')), isClaimed(tables)))
      .prepare(named('orrery_link_occurrence')),
  };
}

export type HandoffStatements = ReturnType<typeof prepareHandoff>;

/** Links claimed rows to their pipelines, one statement for every `(row id, pipeline id)` pair. */
export function linkOccurrences(db: PostgresDb, tables: PostgresTables, links: ReadonlyMap<string, string>, now: Date) {
  const c = tables.cronExecutions;
  // Raw SQL: rows from parallel arrays (unnest), which drizzle's builder cannot name as an UPDATE source.
  const source = sql`unnest(${arrayParam(encodeUuidList([...links.keys()]))}::uuid[],
      ${arrayParam(encodeUuidList([...links.values()]))}::uuid[]) AS v(id, pipeline_id)`;
  return db
    .update(c)
    .set({ status: 'handed_off', pipelineExecutionId: sql`v.pipeline_id`, handedOffAt: now })
    .from(source)
    .where(and(sql`${c.id} = v.id`, isClaimed(tables)));
}

/**
 * In-transaction handoff: creates the pipeline of each claimed row whose fire time has come
 * (or finds it by key) and links the rows in one statement, inside the claim transaction.
 */
export async function handOffInTransaction(
  tx: PostgresDb,
  tables: PostgresTables,
  insert: InsertPipelines,
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
  const stored = await createPipelinesIn(tx, tables, insert, pipelines);
  const links = new Map(due.map((row, i) => [row.id, stored[i]!.pipeline.id]));
  if (links.size > 0) await linkOccurrences(tx, tables, links, now);
  return rows.map((row) => {
    const pipelineExecutionId = links.get(row.id);
    if (pipelineExecutionId === undefined) return row;
    return { ...row, status: 'handed_off', pipelineExecutionId, handedOffAt: now };
  });
}
