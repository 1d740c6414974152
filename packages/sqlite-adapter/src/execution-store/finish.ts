import {
  type FinishTaskRequest,
  type FinishTaskResult,
  taskOutcomeColumns,
  UNFINISHED_PIPELINE_STATUSES,
} from '@orreryjs/core';
import { and, eq, sql } from 'drizzle-orm';
import { bind, encodeTextList, statusIn, textListSql } from '../codec.js';
import type { SqliteHandle } from '../transaction.js';
import { withEndedAttempt } from './attempts.js';
import { isRunning } from './conditions.js';

/*
 * Finishing tasks: a batch of outcomes commits in one BEGIN IMMEDIATE transaction, each fenced
 * on (lease owner, attempt), and the terminal ones ready their dependents and count down their
 * pipelines in the same transaction, so parents finishing together cannot strand a child.
 */

/** Prepares the finish statements once on the connection. */
export function prepareFinish({ db, tables }: SqliteHandle) {
  const { pipelineExecutions: p, taskExecutions: t } = tables;
  const placeholder = sql.placeholder;
  const now = bind(t.updatedAt, 'now');
  const commitOutcome = db
    .update(t)
    .set({
      status: bind(t.status, 'status'),
      output: bind(t.output, 'output'),
      error: bind(t.error, 'error'),
      failedAttempts: sql`${t.failedAttempts} + ${placeholder('failed')}`,
      availableAt: sql`coalesce(${bind(t.availableAt, 'availableAt')}, ${t.availableAt})`,
      completedAt: bind(t.completedAt, 'completedAt'),
      // A task claimed ahead whose start no renewal recorded yet: its outcome records it.
      startedAt: sql`coalesce(${t.startedAt}, ${now})`,
      // A failed or timed-out attempt joins the history; a completed one writes nothing more.
      attemptHistory: sql`CASE WHEN ${placeholder('attemptOutcome')} IS NULL THEN ${t.attemptHistory} ELSE ${withEndedAttempt(t, now, placeholder('attemptOutcome'), bind(t.error, 'error'))} END`,
      leaseOwner: null,
      leaseExpiresAt: null,
      updatedAt: now,
    })
    .where(
      and(
        eq(t.id, bind(t.id, 'id')),
        eq(t.leaseOwner, bind(t.leaseOwner, 'runnerId')),
        eq(t.attempt, placeholder('attempt')),
        isRunning(tables),
      ),
    )
    .returning({ taskId: t.taskId })
    .prepare();
  const releaseDependents = db
    .update(t)
    .set({
      pendingDeps: sql`${t.pendingDeps} - 1`,
      status: sql`CASE WHEN ${t.pendingDeps} = 1 AND ${t.status} = 'not_started' THEN 'ready' ELSE ${t.status} END`,
      availableAt: sql`CASE WHEN ${t.pendingDeps} = 1 AND ${t.status} = 'not_started' THEN ${now} + ${t.delayMs} ELSE ${t.availableAt} END`,
      updatedAt: now,
    })
    .where(
      and(
        eq(t.pipelineExecutionId, bind(t.pipelineExecutionId, 'pipelineId')),
        sql`${t.pendingDeps} > 0`,
        sql`${t.taskId} IN ${textListSql(placeholder('dependents'))}`,
      ),
    )
    .returning({ status: t.status, pendingDeps: t.pendingDeps })
    .prepare();
  const countDownPipeline = db
    .update(p)
    .set({
      remainingTasks: sql`${p.remainingTasks} - 1`,
      failedTasks: sql`${p.failedTasks} + ${placeholder('failed')}`,
      error: sql`coalesce(${p.error}, ${placeholder('error')})`,
      updatedAt: now,
    })
    .where(eq(p.id, bind(p.id, 'id')))
    .returning({ remainingTasks: p.remainingTasks })
    .prepare();
  const endPipeline = db
    .update(p)
    .set({
      status: sql`CASE WHEN ${p.failedTasks} > 0 THEN 'failed' ELSE 'completed' END`,
      completedAt: now,
      updatedAt: now,
    })
    .where(
      and(eq(p.id, bind(p.id, 'id')), sql`${p.remainingTasks} <= 0`, statusIn(p.status, UNFINISHED_PIPELINE_STATUSES)),
    )
    .returning()
    .prepare();
  return {
    // Differs by necessity: no UPDATE in a CTE, so an outcome is four statements in order: the
    // fenced task row, its dependents, its pipeline's count, and the pipeline's end.
    finishTasks: [commitOutcome, releaseDependents, countDownPipeline, endPipeline] as const,
  };
}

export type FinishStatements = ReturnType<typeof prepareFinish>;

/**
 * Commits a batch of attempts' outcomes, each fenced on its own; results in input order. Runs
 * inside the caller's BEGIN IMMEDIATE transaction.
 */
export function finishTasks(q: FinishStatements, requests: readonly FinishTaskRequest[]): FinishTaskResult[] {
  // differs by necessity: no UPDATE in a CTE, so the outcomes apply one row at a time, in order.
  return requests.map((request) => finishOutcome(q, request));
}

/** Commits one attempt's outcome, fenced; a terminal one readies dependents and may end the pipeline. */
function finishOutcome(q: FinishStatements, request: FinishTaskRequest): FinishTaskResult {
  const [commitOutcome, releaseDependents, countDownPipeline, endPipeline] = q.finishTasks;
  const { outcome, now } = request;
  const columns = taskOutcomeColumns(outcome, now);
  const fenced = commitOutcome.get({
    ...columns,
    id: request.taskExecutionId,
    runnerId: request.runnerId,
    attempt: request.attempt,
    now,
  });
  if (fenced === undefined) return { accepted: false, readied: 0, finishedPipeline: null };
  // A retry ends nothing; an instance of a map task readies and counts nothing itself: it settles its task (see maps.ts).
  if (outcome.status === 'retry' || request.mapInstance !== undefined) {
    return { accepted: true, readied: 0, finishedPipeline: null };
  }
  const readied =
    request.dependents.length === 0
      ? 0
      : releaseDependents
          .all({ pipelineId: request.pipelineExecutionId, dependents: encodeTextList(request.dependents), now })
          .filter((row) => row.status === 'ready' && row.pendingDeps === 0).length;
  const counted = countDownPipeline.get({
    id: request.pipelineExecutionId,
    failed: columns.failed,
    error: outcome.status === 'failed' ? `task ${fenced.taskId} failed: ${outcome.error}` : null,
    now,
  });
  const finished =
    counted !== undefined && counted.remainingTasks <= 0
      ? endPipeline.get({ id: request.pipelineExecutionId, now })
      : undefined;
  return { accepted: true, readied, finishedPipeline: finished ?? null };
}
