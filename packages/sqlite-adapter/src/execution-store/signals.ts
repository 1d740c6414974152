import {
  isTerminalPipelineStatus,
  type SendSignalRequest,
  type SendSignalResult,
  type WaitForSignalRequest,
  type WaitForSignalResult,
} from '@orreryjs/core';
import { and, eq, gt, sql } from 'drizzle-orm';
import { bind } from '../codec.js';
import type { SqliteHandle } from '../transaction.js';
import type { LeaseStatements } from './lease.js';

/*
 * Signals: stored once per (execution, name), early ones kept; a signal wakes the wait task
 * that sleeps for it, whose next attempt reads it and completes (or its claim brings it along).
 */

/** Prepares the signal statements once on the connection. */
export function prepareSignals({ db, tables }: SqliteHandle) {
  const { pipelineExecutions: p, signals: g, taskExecutions: t } = tables;
  const ofSignal = and(
    eq(g.pipelineExecutionId, bind(g.pipelineExecutionId, 'executionId')),
    eq(g.name, bind(g.name, 'name')),
  );
  return {
    // The execution's status; unless it has ended, the signal stored unless one of its name is there
    // (a row returned only when stored); when stored, the execution's ready wait task of this signal
    // made claimable now. Differs by necessity: no UPDATE in a CTE, so three statements in order, and
    // no row lock: the writer's BEGIN IMMEDIATE orders a signal, a wait and the execution's end.
    sendSignal: [
      db
        .select({ status: p.status })
        .from(p)
        .where(eq(p.id, bind(p.id, 'executionId')))
        .prepare(),
      db
        .insert(g)
        .values({
          pipelineExecutionId: bind(g.pipelineExecutionId, 'executionId'),
          name: bind(g.name, 'name'),
          payload: bind(g.payload, 'payload'),
          receivedAt: bind(g.receivedAt, 'now'),
        })
        .onConflictDoNothing()
        .returning({ name: g.name })
        .prepare(),
      db
        .update(t)
        .set({ availableAt: bind(t.availableAt, 'now'), updatedAt: bind(t.updatedAt, 'now') })
        .where(
          and(
            eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'executionId')),
            eq(t.waitSignal, bind(t.waitSignal, 'name')),
            sql`${t.status} = 'ready'`,
            gt(t.availableAt, bind(t.availableAt, 'now')),
          ),
        )
        .prepare(),
    ] as const,
    // Differs by necessity: no sharePipeline (a row lock); the writer's BEGIN IMMEDIATE orders a wait and a signal.
    // The signal `name` of an execution.
    selectSignal: db.select({ wrapped: g.payload }).from(g).where(ofSignal).prepare(),
  };
}

export type SignalStatements = ReturnType<typeof prepareSignals>;

/** Stores a signal and wakes its wait task inside the caller's write transaction (see ExecutionStore.sendSignal). */
export function sendSignalIn(q: SignalStatements, request: SendSignalRequest): SendSignalResult {
  // Wrapped in an object, as the column holds it: a payload may be any JSON value.
  const params = { ...request, payload: { value: request.payload } };
  const [lockPipelineStatus, insertSignal, wakeWaitingTask] = q.sendSignal;
  const pipeline = lockPipelineStatus.get(params);
  if (pipeline === undefined) return 'unknown';
  if (isTerminalPipelineStatus(pipeline.status)) return 'terminal';
  if (insertSignal.all(params).length === 0) return 'duplicate';
  wakeWaitingTask.run(params);
  return 'sent';
}

/** A wait task looks for its signal inside the caller's write transaction (see ExecutionStore.waitForSignal). */
export function waitForSignalIn(
  q: { signals: SignalStatements; lease: LeaseStatements },
  request: WaitForSignalRequest,
): WaitForSignalResult {
  const signal = q.signals.selectSignal.get({ executionId: request.pipelineExecutionId, name: request.name });
  if (signal !== undefined) return { status: 'signalled', payload: signal.wrapped.value };
  if (request.sleepUntil === null) return { status: 'timedOut' };
  const given = q.lease.deferTask.all({ ...request, availableAt: request.sleepUntil });
  return given.length > 0 ? { status: 'waiting' } : { status: 'lost' };
}
