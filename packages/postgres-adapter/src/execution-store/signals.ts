import {
  isTerminalPipelineStatus,
  type PipelineStatus,
  type SendSignalRequest,
  type SendSignalResult,
  TERMINAL_PIPELINE_STATUSES,
  type WaitForSignalRequest,
  type WaitForSignalResult,
} from '@orreryjs/core';
import { and, eq, type SQLWrapper, sql } from 'drizzle-orm';
import type pg from 'pg';
import { bind, DRIVER_TEXT_TYPES, renderBuilt, statusNotIn } from '../codec.js';
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
 * signal's latency is its round trips: issue 23).
 */
export function prepareSignals({ db, tables, named }: PostgresHandle) {
  const { pipelineExecutions: p, signals: g, taskExecutions: t } = tables;
  const executionId = bind(p.id, 'executionId');
  const name = bind(g.name, 'name');
  const now = bind(g.receivedAt, 'now');
  // A ready wait task asleep: one given back, whose signal wakes it.
  const wakes = sql`${t.status} = 'ready' AND ${t.availableAt} > ${now}`;
  return {
    /**
     * sendSignal as one statement: the execution's row locked (so that a signal, a wait task's
     * look and the execution's end are ordered) and its status read; unless it has ended, the
     * signal stored unless one of its name is there; when stored, the execution's ready wait
     * task of this signal made claimable now (a trigger tells the other processes).
     *
     * The wake-up reads the wait task as the statement's snapshot saw it, which may predate a
     * look that held the row and gave the task back (status `running` then, `ready` at the end
     * of time now). So it matches a `running` task too, and sets the values by CASE from the
     * row it updates: a row changed since the snapshot is read again at its latest version
     * (READ COMMITTED's recheck of an UPDATE), so the task given back is woken, and a task
     * still running is left as it is. Raw SQL: an insert and an update in CTEs, and columns
     * set by CASE, which drizzle's builder cannot chain.
     */
    sendSignal: namedStatement(
      named,
      'orrery_send_signal',
      sql`WITH locked AS (
  SELECT ${p.status} FROM ${p} WHERE ${eq(p.id, executionId)} FOR UPDATE
), stored AS (
  INSERT INTO ${g} (${sql.identifier(g.pipelineExecutionId.name)}, ${sql.identifier(g.name.name)}, ${sql.identifier(g.payload.name)}, ${sql.identifier(g.receivedAt.name)})
  SELECT ${bind(g.pipelineExecutionId, 'executionId')}, ${name}, ${bind(g.payload, 'payload')}, ${now} FROM locked
  WHERE ${statusNotIn(sql.raw('locked.status'), TERMINAL_PIPELINE_STATUSES)}
  ON CONFLICT DO NOTHING RETURNING 1
), woken AS (
  UPDATE ${t} SET ${sql.identifier(t.availableAt.name)} = CASE WHEN ${wakes} THEN ${now} ELSE ${t.availableAt} END,
    ${sql.identifier(t.updatedAt.name)} = CASE WHEN ${wakes} THEN ${now} ELSE ${t.updatedAt} END
  WHERE ${and(
    eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'executionId')),
    eq(t.waitSignal, bind(t.waitSignal, 'name')),
    sql`${t.status} IN ('ready', 'running')`,
  )} AND EXISTS (SELECT FROM stored)
)
SELECT (SELECT status FROM locked) AS status, (SELECT count(*)::int FROM stored) AS stored`,
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

/** Stores a signal and wakes its wait task, in one statement (see ExecutionStore.sendSignal). */
export async function sendSignal(
  q: SignalStatements,
  pool: pg.Pool,
  request: SendSignalRequest,
): Promise<SendSignalResult> {
  // Wrapped in an object, as the column holds it: a payload may be any JSON value.
  const [row] = await q.sendSignal.execute(pool, { ...request, payload: { value: request.payload } });
  const status = row?.status as PipelineStatus | null | undefined;
  if (status === null || status === undefined) return 'unknown';
  if (isTerminalPipelineStatus(status)) return 'terminal';
  return row!.stored === 0 ? 'duplicate' : 'sent';
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
