import type { CronExecutionRow, NewPipeline } from '@orreryjs/core';
import { and, eq, sql } from 'drizzle-orm';
import { bind } from '../codec.js';
import { type QueueStatements, queueCreated } from '../execution-store/admission.js';
import { createPipelineIn } from '../execution-store/pipelines.js';
import type { SqliteHandle } from '../transaction.js';
import { isClaimed } from './conditions.js';
import { insertOccurrenceRow, type LedgerStatements } from './ledger.js';

/*
 * Handoff, phase 2: a `claimed` row becomes `handed_off` with its pipeline's id after the
 * executor started the pipeline (two-phase); or the claim transaction writes the row
 * `handed_off` with the pipeline it creates (in-transaction).
 */

/** Prepares the handoff statements once on the connection. */
export function prepareHandoff({ db, tables }: SqliteHandle) {
  const c = tables.cronExecutions;
  return {
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
      .prepare(),
    // The in-transaction handoff's rows whose key another pipeline held. Differs by necessity: no UPDATE ... FROM
    // over arrays, so it runs once per pair.
    relinkOccurrences: db
      .update(c)
      .set({ pipelineExecutionId: bind(c.pipelineExecutionId, 'pipelineId') })
      .where(and(eq(c.id, bind(c.id, 'id')), sql`${c.status} = 'handed_off'`))
      .prepare(),
  };
}

export type HandoffStatements = ReturnType<typeof prepareHandoff>;

/**
 * Phase 1 with the in-transaction handoff: writes the claim's new ledger rows, those whose fire
 * time has come already `handed_off` to the pipeline `prepareHandoff` builds for them (so each
 * row is written once, not inserted `claimed` and then updated), and creates the pipeline of
 * each row inserted, inside the claim transaction. A row whose slot was taken inserts nothing
 * and starts no pipeline. A pipeline whose key (the row id) another one already holds is not
 * created: the holder stands for it and the row is linked to it. Returns the rows inserted, as
 * stored, in input order.
 */
export function handOffInTransaction(
  q: HandoffStatements,
  ledger: LedgerStatements,
  pipelines: QueueStatements,
  rows: readonly CronExecutionRow[],
  prepareHandoff: (occurrence: CronExecutionRow) => NewPipeline | null,
  now: Date,
): CronExecutionRow[] {
  const inserted: CronExecutionRow[] = [];
  for (const row of rows) {
    const pipeline = row.status === 'claimed' && row.fireAt.getTime() <= now.getTime() ? prepareHandoff(row) : null;
    const toWrite: CronExecutionRow =
      pipeline === null ? row : { ...row, status: 'handed_off', pipelineExecutionId: pipeline.id, handedOffAt: now };
    const stored = insertOccurrenceRow(ledger, toWrite);
    if (stored === undefined) continue;
    if (pipeline === null) {
      inserted.push(stored);
      continue;
    }
    const pipelineId = queueCreated(pipelines, [pipeline], [createPipelineIn(pipelines.pipelines, pipeline)])[0]!
      .pipeline.id;
    if (pipelineId === pipeline.id) inserted.push(stored);
    else {
      q.relinkOccurrences.run({ id: row.id, pipelineId });
      inserted.push({ ...stored, pipelineExecutionId: pipelineId });
    }
  }
  return inserted;
}
