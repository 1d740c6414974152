import {
  type DueScheduleState,
  type ManualOccurrenceRequest,
  type ManualOccurrenceResult,
  newCronExecutionRow,
} from '@orreryjs/core';
import { eq } from 'drizzle-orm';
import { bind } from '../codec.js';
import { type ControlStatements, cancelPipeline } from '../execution-store/control.js';
import type { PipelineStatements } from '../execution-store/pipelines.js';
import type { SqliteHandle } from '../transaction.js';
import { activePipelinesOf, activeSchedulesOf, type ClaimStatements, skipReplacedClaims } from './claim.js';
import { insertOccurrenceRow, type LedgerStatements } from './ledger.js';

/*
 * Manual triggers under the overlap policy: like phase 1 of a tick, the decision and the
 * ledger row commit together, and BEGIN IMMEDIATE holds the write lock, so a trigger and a tick
 * (or two triggers) take turns and the second sees the first's row as active.
 */

/** Prepares the trigger statements once on the connection. */
export function prepareTrigger({ db, tables }: SqliteHandle) {
  const s = tables.cronSchedules;
  return {
    // Differs by necessity: no row lock in SQLite; BEGIN IMMEDIATE already holds the database's write lock.
    lockSchedule: db
      .select()
      .from(s)
      .where(eq(s.id, bind(s.id, 'id')))
      .prepare(),
  };
}

export type LockStatements = ReturnType<typeof prepareTrigger>;

/** The statements a manual trigger runs. */
export interface TriggerStatements {
  trigger: LockStatements;
  claim: ClaimStatements;
  ledger: LedgerStatements;
  control: ControlStatements;
  pipelines: PipelineStatements;
}

/** See CronStore.insertManualOccurrence: inside the caller's write transaction. */
export function insertManualOccurrence(
  q: TriggerStatements,
  request: ManualOccurrenceRequest,
): ManualOccurrenceResult | null {
  const scheduleId = request.row.scheduleId;
  const schedule = q.trigger.lockSchedule.get({ id: scheduleId });
  if (schedule === undefined) return null;
  // Read inside BEGIN IMMEDIATE: every claim committed before is seen.
  const active = activeSchedulesOf(q.claim, [scheduleId]).has(scheduleId);
  const state: DueScheduleState = active
    ? { hasActiveOccurrence: true, activePipelineIds: activePipelinesOf(q.claim, [scheduleId]).get(scheduleId) ?? [] }
    : { hasActiveOccurrence: false };
  const plan = request.plan(schedule, state);
  if (plan.skipBuffered === true) q.claim.skipBufferedRows.run({ scheduleId });
  if (plan.skipClaimed === true) skipReplacedClaims(q, scheduleId, request.row.claimedAt);
  for (const id of plan.cancelPipelineIds ?? []) cancelPipeline(q, id, request.row.claimedAt);
  // A manual row has a random id: it never meets ON CONFLICT.
  const row = insertOccurrenceRow(q.ledger, newCronExecutionRow({ ...request.row, status: plan.status }))!;
  return { row, state };
}
