import type { CronExecutionRow, NewPipeline } from '@orreryjs/core';
import { and, eq } from 'drizzle-orm';
import { bind } from '../codec.js';
import { type QueueStatements, queueCreated } from '../execution-store/admission.js';
import { createPipelineIn } from '../execution-store/pipelines.js';
import type { SqliteHandle } from '../transaction.js';
import { isClaimed } from './conditions.js';

/*
 * Handoff, phase 2: a `claimed` row becomes `handed_off` with its pipeline's id, either after
 * the executor started the pipeline (two-phase) or inside the claim transaction.
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
    // The in-transaction handoff's links. Differs by necessity: no UPDATE ... FROM over arrays, so it runs once per pair.
    linkOccurrences: db
      .update(c)
      .set({
        status: 'handed_off',
        pipelineExecutionId: bind(c.pipelineExecutionId, 'pipelineId'),
        handedOffAt: bind(c.handedOffAt, 'now'),
      })
      .where(and(eq(c.id, bind(c.id, 'id')), isClaimed(tables)))
      .prepare(),
  };
}

export type HandoffStatements = ReturnType<typeof prepareHandoff>;

/**
 * In-transaction handoff of claimed rows: creates the pipeline of each row whose fire time has
 * come (or finds it by key) and links the row, inside the claim transaction.
 */
export function handOffInTransaction(
  q: HandoffStatements,
  pipelines: QueueStatements,
  rows: readonly CronExecutionRow[],
  prepareHandoff: (occurrence: CronExecutionRow) => NewPipeline | null,
  now: Date,
): CronExecutionRow[] {
  return rows.map((row) => {
    if (row.fireAt.getTime() > now.getTime()) return row;
    const pipeline = prepareHandoff(row);
    if (pipeline === null) return row;
    const stored = queueCreated(pipelines, [pipeline], [createPipelineIn(pipelines.pipelines, pipeline)])[0]!.pipeline;
    q.linkOccurrences.run({ id: row.id, pipelineId: stored.id, now });
    return { ...row, status: 'handed_off', pipelineExecutionId: stored.id, handedOffAt: now };
  });
}
