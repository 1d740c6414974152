import {
  type FinishTaskRequest,
  type FinishTaskResult,
  type PipelineRow,
  taskOutcomeColumns,
  UNFINISHED_PIPELINE_STATUSES,
} from '@orreryjs/core';
import { and, eq, getTableColumns, sql } from 'drizzle-orm';
import { aliasColumns, bind, inTextList, pickAliased, statusIn, storableText } from '../codec.js';
import type { PostgresHandle } from '../transaction.js';
import { isRunning } from './lease.js';

/*
 * Finishing a task: the outcome commits fenced on (lease owner, attempt), and a terminal one
 * readies the dependents and counts down the pipeline in the same statement, after locking the
 * pipeline row, so parents finishing together cannot strand a child.
 */

/**
 * finishTask as one statement. It first locks the pipeline row, then commits the outcome fenced
 * on (lease owner, attempt, running); a terminal outcome then decrements the dependents' pending
 * counts (readying those at 0) and the pipeline's remaining count, ending it at 0. Each counter
 * is decremented on the row's latest version, so parents finishing together cannot strand a child.
 */
export function prepareFinish({ db, tables, named }: PostgresHandle) {
  const { pipelineExecutions: p, taskExecutions: t } = tables;
  const pipelineRow = getTableColumns(p);
  const placeholder = sql.placeholder;
  const now = bind(t.updatedAt, 'now');
  const terminal = sql`${placeholder('terminal')}::boolean`;
  const failed = sql`${placeholder('failed')}::int`;
  const unfinished = (column: unknown) => statusIn(sql`${column}`, UNFINISHED_PIPELINE_STATUSES);
  const locked = db.$with('locked').as(
    db
      .select({ id: p.id, status: sql<string>`${p.status}`.as('locked_status') })
      .from(p)
      .where(eq(p.id, bind(p.id, 'pipelineId')))
      .for('no key update'),
  );
  const fenced = db.$with('fenced').as(
    db
      .update(t)
      .set({
        status: bind(t.status, 'status'),
        output: bind(t.output, 'output'),
        error: bind(t.error, 'error'),
        failedAttempts: sql`${t.failedAttempts} + ${failed}`,
        availableAt: sql`coalesce(${bind(t.availableAt, 'availableAt')}, ${t.availableAt})`,
        completedAt: bind(t.completedAt, 'completedAt'),
        leaseOwner: null,
        leaseExpiresAt: null,
        updatedAt: now,
      })
      .where(
        and(
          eq(t.id, bind(t.id, 'id')),
          eq(t.leaseOwner, bind(t.leaseOwner, 'runnerId')),
          eq(t.attempt, sql`${placeholder('attempt')}::int`),
          isRunning(tables),
          // Referencing the lock makes it happen first.
          sql`${t.pipelineExecutionId} IN (SELECT ${locked.id} FROM ${locked})`,
        ),
      )
      .returning({ taskId: t.taskId }),
  );
  const released = db.$with('released').as(
    db
      .update(t)
      .set({
        pendingDeps: sql`${t.pendingDeps} - 1`,
        status: sql`CASE WHEN ${t.pendingDeps} = 1 AND ${t.status} = 'not_started' THEN 'ready' ELSE ${t.status} END`,
        availableAt: sql`CASE WHEN ${t.pendingDeps} = 1 AND ${t.status} = 'not_started' THEN ${now} ELSE ${t.availableAt} END`,
        updatedAt: now,
      })
      .where(
        and(
          terminal,
          sql`EXISTS (SELECT 1 FROM ${fenced})`,
          eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineId')),
          sql`${t.pendingDeps} > 0`,
          inTextList(t.taskId, placeholder('dependents')),
        ),
      )
      .returning({ status: t.status, pendingDeps: t.pendingDeps }),
  );
  const ends = sql`${p.remainingTasks} <= 1 AND ${unfinished(p.status)}`;
  const counted = db.$with('counted').as(
    db
      .update(p)
      .set({
        remainingTasks: sql`${p.remainingTasks} - 1`,
        failedTasks: sql`${p.failedTasks} + ${failed}`,
        error: sql`coalesce(${p.error}, 'task ' || (SELECT ${fenced.taskId} FROM ${fenced}) || ' failed: ' || ${placeholder('failure')}::text)`,
        status: sql`CASE WHEN ${ends} THEN (CASE WHEN ${p.failedTasks} + ${failed} > 0 THEN 'failed' ELSE 'completed' END) ELSE ${p.status} END`,
        completedAt: sql`CASE WHEN ${ends} THEN ${now} ELSE ${p.completedAt} END`,
        updatedAt: now,
      })
      .from(locked)
      .where(and(terminal, eq(p.id, locked.id), sql`EXISTS (SELECT 1 FROM ${fenced})`))
      .returning({
        ...aliasColumns(pipelineRow, 'c_'),
        ended: sql<boolean>`${unfinished(locked.status)} AND ${p.remainingTasks} <= 0`.as('ended'),
      }),
  );
  return {
    finishTask: db
      .with(locked, fenced, released, counted)
      .select({
        accepted: sql<number>`(SELECT count(*) FROM ${fenced})::int`,
        readied: sql<number>`(SELECT count(*) FROM ${released} WHERE status = 'ready' AND pending_deps = 0)::int`,
        ended: counted.ended,
        pipeline: pickAliased(counted, pipelineRow, 'c_'),
      })
      .from(sql`(SELECT 1) AS one`)
      .leftJoin(counted, sql`true`)
      .prepare(named('orrery_finish_task')),
  };
}

export type FinishStatements = ReturnType<typeof prepareFinish>;

/** Commits an attempt's outcome, fenced; a terminal one readies dependents and may end the pipeline. */
export async function finishTask(q: FinishStatements, request: FinishTaskRequest): Promise<FinishTaskResult> {
  const { outcome, now } = request;
  const { failed, ...columns } = taskOutcomeColumns(outcome, now);
  const [row] = await q.finishTask.execute({
    ...columns,
    failed,
    id: request.taskExecutionId,
    pipelineId: request.pipelineExecutionId,
    runnerId: request.runnerId,
    attempt: request.attempt,
    terminal: outcome.status !== 'retry',
    failure: outcome.status === 'failed' ? storableText(outcome.error) : null,
    dependents: request.dependents,
    now,
  });
  if (row === undefined || row.accepted === 0) return { accepted: false, readied: 0, finishedPipeline: null };
  const finished = row.ended === true ? (row.pipeline as PipelineRow) : null;
  return { accepted: true, readied: row.readied, finishedPipeline: finished };
}
