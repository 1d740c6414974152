import type { CronExecutionRow, NewPipeline } from '@orreryjs/core';
import { and, eq, sql } from 'drizzle-orm';
import { arrayParam, bind, encodeUuidList } from '../codec.js';
import { createPipelinesIn, type InsertPipelines, prepareInsertPipelines } from '../execution-store/pipelines.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb, PostgresHandle } from '../transaction.js';
import { isClaimed } from './conditions.js';
import { insertOccurrenceRows } from './ledger.js';

/*
 * Handoff, phase 2: a `claimed` row becomes `handed_off` with its pipeline's id after the
 * executor started the pipeline (two-phase); or the claim transaction writes the row
 * `handed_off` with the pipeline it creates (in-transaction).
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

/**
 * Points `handed_off` rows at other pipelines, one statement for every `(row id, pipeline id)`
 * pair: the in-transaction handoff's rows whose key another pipeline already held.
 */
export function relinkOccurrences(db: PostgresDb, tables: PostgresTables, links: ReadonlyMap<string, string>) {
  const c = tables.cronExecutions;
  // Raw SQL: rows from parallel arrays (unnest), which drizzle's builder cannot name as an UPDATE source.
  const source = sql`unnest(${arrayParam(encodeUuidList([...links.keys()]))}::uuid[],
      ${arrayParam(encodeUuidList([...links.values()]))}::uuid[]) AS v(id, pipeline_id)`;
  return db
    .update(c)
    .set({ pipelineExecutionId: sql`v.pipeline_id` })
    .from(source)
    .where(and(sql`${c.id} = v.id`, sql`${c.status} = 'handed_off'`));
}

/**
 * Phase 1 with the in-transaction handoff: writes the claim's new ledger rows, those whose fire
 * time has come already `handed_off` to the pipeline `prepareHandoff` builds for them (so each
 * row is written once, not inserted `claimed` and then updated), then creates the pipelines of
 * the rows inserted, one statement each, all in the claim transaction. A row whose slot was
 * taken inserts nothing and starts no pipeline. A pipeline whose key (the row id) another one
 * already holds is not created: the holder stands for it and the row is linked to it.
 * Returns the rows inserted, as stored, in input order.
 */
export async function handOffInTransaction(
  tx: PostgresDb,
  tables: PostgresTables,
  insert: InsertPipelines,
  rows: readonly CronExecutionRow[],
  prepareHandoff: (occurrence: CronExecutionRow) => NewPipeline | null,
  now: Date,
): Promise<CronExecutionRow[]> {
  const prepared = new Map<string, NewPipeline>();
  const toWrite = rows.map((row): CronExecutionRow => {
    if (row.status !== 'claimed' || row.fireAt.getTime() > now.getTime()) return row;
    const pipeline = prepareHandoff(row);
    if (pipeline === null) return row;
    prepared.set(row.id, pipeline);
    return { ...row, status: 'handed_off', pipelineExecutionId: pipeline.id, handedOffAt: now };
  });
  const inserted = await insertOccurrenceRows(tx, tables, toWrite);
  const handedOff = inserted.filter((row) => prepared.has(row.id));
  const stored = await createPipelinesIn(
    tx,
    tables,
    insert,
    handedOff.map((row) => prepared.get(row.id)!),
  );
  const relinks = new Map<string, string>();
  handedOff.forEach((row, i) => {
    const pipelineId = stored[i]!.pipeline.id;
    if (pipelineId !== row.pipelineExecutionId) relinks.set(row.id, pipelineId);
  });
  if (relinks.size === 0) return inserted;
  await relinkOccurrences(tx, tables, relinks);
  return inserted.map((row) => {
    const pipelineExecutionId = relinks.get(row.id);
    return pipelineExecutionId === undefined ? row : { ...row, pipelineExecutionId };
  });
}
