import {
  isTerminalPipelineStatus,
  type SendSignalRequest,
  type SendSignalResult,
  type WaitForSignalRequest,
  type WaitForSignalResult,
} from '@orreryjs/core';
import { and, eq, gt, sql } from 'drizzle-orm';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb } from '../transaction.js';
import { deferTask } from './lease.js';

/*
 * Signals: stored once per (execution, name), early ones kept; a signal wakes the wait task
 * that sleeps for it, whose next attempt reads it and completes.
 */

/** The execution's status, its row locked, so that a signal and the execution's end are ordered. */
export function lockPipelineStatus(db: PostgresDb, { pipelineExecutions: p }: PostgresTables, id: string) {
  return db.select({ status: p.status }).from(p).where(eq(p.id, id)).for('update');
}

/**
 * Holds the pipeline row while a wait task looks for its signal: a signal (which locks it for
 * update) is then either committed and seen, or waits and wakes the task given back.
 */
export function sharePipeline(db: PostgresDb, { pipelineExecutions: p }: PostgresTables, id: string) {
  return db.select({ id: p.id }).from(p).where(eq(p.id, id)).for('share');
}

/** Stores the signal unless one of its name is there; returns a row only when stored. */
export function insertSignal(db: PostgresDb, { signals: g }: PostgresTables, request: SendSignalRequest) {
  return db
    .insert(g)
    .values({
      pipelineExecutionId: request.executionId,
      name: request.name,
      // Wrapped in an object, as the column holds it: a payload may be any JSON value.
      payload: { value: request.payload },
      receivedAt: request.now,
    })
    .onConflictDoNothing()
    .returning({ name: g.name });
}

/** Makes the execution's ready wait task of this signal claimable now (a trigger tells the other processes). */
export function wakeWaitingTask(db: PostgresDb, { taskExecutions: t }: PostgresTables, request: SendSignalRequest) {
  return db
    .update(t)
    .set({ availableAt: request.now, updatedAt: request.now })
    .where(
      and(
        eq(t.pipelineExecutionId, request.executionId),
        eq(t.waitSignal, request.name),
        sql`${t.status} = 'ready'`,
        gt(t.availableAt, request.now),
      ),
    );
}

/** The signal `name` of an execution. */
export function selectSignal(db: PostgresDb, { signals: g }: PostgresTables, executionId: string, name: string) {
  return db
    .select({ wrapped: g.payload })
    .from(g)
    .where(and(eq(g.pipelineExecutionId, executionId), eq(g.name, name)));
}

/** Stores a signal and wakes its wait task inside `tx` (see ExecutionStore.sendSignal). */
export async function sendSignalIn(
  tx: PostgresDb,
  tables: PostgresTables,
  request: SendSignalRequest,
): Promise<SendSignalResult> {
  const [pipeline] = await lockPipelineStatus(tx, tables, request.executionId);
  if (pipeline === undefined) return 'unknown';
  if (isTerminalPipelineStatus(pipeline.status)) return 'terminal';
  const [stored] = await insertSignal(tx, tables, request);
  if (stored === undefined) return 'duplicate';
  await wakeWaitingTask(tx, tables, request);
  return 'sent';
}

/** A wait task looks for its signal inside `tx` (see ExecutionStore.waitForSignal). */
export async function waitForSignalIn(
  tx: PostgresDb,
  tables: PostgresTables,
  request: WaitForSignalRequest,
): Promise<WaitForSignalResult> {
  await sharePipeline(tx, tables, request.pipelineExecutionId);
  const [signal] = await selectSignal(tx, tables, request.pipelineExecutionId, request.name);
  if (signal !== undefined) return { status: 'signalled', payload: signal.wrapped.value };
  if (request.sleepUntil === null) return { status: 'timedOut' };
  const given = await deferTask(tx, tables, { ...request, availableAt: request.sleepUntil });
  return given.length > 0 ? { status: 'waiting' } : { status: 'lost' };
}
