import {
  isTerminalPipelineStatus,
  type PipelineStatus,
  type SendSignalRequest,
  type SendSignalResult,
  type WaitForSignalRequest,
  type WaitForSignalResult,
} from '@orreryjs/core';
import { and, eq, type SQLWrapper, sql } from 'drizzle-orm';
import type pg from 'pg';
import { bind, DRIVER_TEXT_TYPES, renderBuilt } from '../codec.js';
import type { PostgresTables } from '../schema.js';
import type { PostgresDb, PostgresHandle } from '../transaction.js';
import { deferTask } from './lease.js';

/*
 * Signals: stored once per (execution, name), early ones kept; a signal wakes the wait task
 * that sleeps for it, whose next attempt reads it and completes (or its claim brings it along).
 */

/** A statement rendered once and sent under one name on the transaction's connection. */
function namedStatement(named: PostgresHandle['named'], name: string, query: SQLWrapper) {
  const rendered = renderBuilt(query);
  const statementName = named(name);
  return {
    // The snapshot test reads the text through getQuery().
    getQuery: () => ({ sql: rendered.text() }),
    async execute(client: pg.Pool | pg.PoolClient, placeholders: Record<string, unknown>) {
      const query = { name: statementName, text: rendered.text(), values: rendered.values(placeholders) };
      return (await client.query<Record<string, unknown>>({ ...query, types: DRIVER_TEXT_TYPES })).rows;
    },
  };
}

/**
 * Builds the signal statements once; each is named, so each connection parses it once (a
 * signal's latency is its transaction's round trips: issue 23).
 */
export function prepareSignals({ db, tables, named }: PostgresHandle) {
  const { pipelineExecutions: p, signals: g, taskExecutions: t } = tables;
  const executionId = bind(p.id, 'executionId');
  const name = bind(g.name, 'name');
  const now = bind(g.receivedAt, 'now');
  return {
    /** The execution's status, its row locked, so that a signal and the execution's end are ordered. */
    lockPipelineStatus: namedStatement(
      named,
      'orrery_lock_pipeline_status',
      db.select({ status: p.status }).from(p).where(eq(p.id, executionId)).for('update'),
    ),
    /**
     * Holds the pipeline row while a wait task looks for its signal: a signal (which locks it for
     * update) is then either committed and seen, or waits and wakes the task given back.
     */
    sharePipeline: namedStatement(
      named,
      'orrery_share_pipeline',
      db.select({ id: p.id }).from(p).where(eq(p.id, executionId)).for('share'),
    ),
    /**
     * Stores the signal unless one of its name is there and, when stored, makes the execution's
     * ready wait task of this signal claimable now (a trigger tells the other processes); says
     * whether it stored. One statement, after the lock: its snapshot, taken once the lock is
     * held, sees a wait task given back by the attempt that held the row. Raw SQL: an insert
     * and an update in CTEs, which drizzle's builder cannot chain.
     */
    insertSignal: namedStatement(
      named,
      'orrery_insert_signal',
      sql`WITH stored AS (
  INSERT INTO ${g} (${sql.identifier(g.pipelineExecutionId.name)}, ${sql.identifier(g.name.name)}, ${sql.identifier(g.payload.name)}, ${sql.identifier(g.receivedAt.name)})
  VALUES (${bind(g.pipelineExecutionId, 'executionId')}, ${name}, ${bind(g.payload, 'payload')}, ${now})
  ON CONFLICT DO NOTHING RETURNING 1
), woken AS (
  UPDATE ${t} SET ${sql.identifier(t.availableAt.name)} = ${now}, ${sql.identifier(t.updatedAt.name)} = ${now}
  WHERE ${and(
    eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'executionId')),
    eq(t.waitSignal, bind(t.waitSignal, 'name')),
    sql`${t.status} = 'ready'`,
    sql`${t.availableAt} > ${now}`,
  )} AND EXISTS (SELECT FROM stored)
)
SELECT count(*)::int AS stored FROM stored`,
    ),
    /** The signal `name` of an execution. */
    selectSignal: namedStatement(
      named,
      'orrery_select_signal',
      db
        .select({ payload: g.payload })
        .from(g)
        .where(and(eq(g.pipelineExecutionId, bind(g.pipelineExecutionId, 'executionId')), eq(g.name, name))),
    ),
  };
}

export type SignalStatements = ReturnType<typeof prepareSignals>;

/** Stores a signal and wakes its wait task inside `tx` (see ExecutionStore.sendSignal). */
export async function sendSignalIn(
  q: SignalStatements,
  tx: PostgresDb,
  request: SendSignalRequest,
): Promise<SendSignalResult> {
  const [pipeline] = await q.lockPipelineStatus.execute(tx.$client, { executionId: request.executionId });
  if (pipeline === undefined) return 'unknown';
  if (isTerminalPipelineStatus(pipeline.status as PipelineStatus)) return 'terminal';
  // Wrapped in an object, as the column holds it: a payload may be any JSON value.
  const [stored] = await q.insertSignal.execute(tx.$client, { ...request, payload: { value: request.payload } });
  return stored?.stored === 0 ? 'duplicate' : 'sent';
}

/** A wait task looks for its signal inside `tx` (see ExecutionStore.waitForSignal). */
export async function waitForSignalIn(
  q: SignalStatements,
  tx: PostgresDb,
  tables: PostgresTables,
  request: WaitForSignalRequest,
): Promise<WaitForSignalResult> {
  const ids = { executionId: request.pipelineExecutionId, name: request.name };
  await q.sharePipeline.execute(tx.$client, ids);
  const [signal] = await q.selectSignal.execute(tx.$client, ids);
  if (signal !== undefined) {
    return { status: 'signalled', payload: decodePayload(tables, signal.payload) };
  }
  if (request.sleepUntil === null) return { status: 'timedOut' };
  const given = await deferTask(tx, tables, { ...request, availableAt: request.sleepUntil });
  return given.length > 0 ? { status: 'waiting' } : { status: 'lost' };
}

/** A stored payload as the driver read it, unwrapped (the column holds `{ value }`). */
function decodePayload({ signals: g }: PostgresTables, value: unknown) {
  return (g.payload.mapFromDriverValue(value) as { value: SendSignalRequest['payload'] }).value;
}
