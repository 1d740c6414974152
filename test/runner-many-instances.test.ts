import type { Storage } from '@orreryjs/core';
import { openPostgresStorage } from '@orreryjs/postgres-adapter';
import { DefaultRunner } from '@orreryjs/runner';
import { afterEach, describe, expect, it } from 'vitest';
import { expectedDone, MANY_TASK_IDS, MANY_WORKFLOW, manyWorkflow, type RunRecord } from './fixtures/many-workflow.js';
import { dropSchema, freshSchemaName, postgresUrl } from './support/postgres.js';
import { spawnFixture, stopWorker, until, type Worker } from './support/processes.js';

const RUNNERS = 3;
const PIPELINES = 500;
const SUBMIT_CONCURRENCY = 10;

/** Starts a runner process and resolves once it printed that it is ready. */
async function startWorker(runnerId: string, env: Record<string, string>): Promise<Worker> {
  const worker = spawnFixture('runner-many-worker.ts', [runnerId], env);
  await worker.ready;
  expect(worker.messages[0]).toEqual({ ready: true, runnerId });
  return worker;
}

/** Stops a runner gracefully and resolves with the counts it printed at shutdown. */
async function stopRunner(worker: Worker): Promise<{ runnerId: string; runs: number; repeats: number }> {
  const { code } = await stopWorker(worker);
  expect(code, worker.stderr()).toBe(0);
  return worker.messages.at(-1) as { runnerId: string; runs: number; repeats: number };
}

describe('three runner processes sharing one Postgres schema', () => {
  const workers: Worker[] = [];
  let submitter: DefaultRunner | undefined;
  let storage: Storage | undefined;
  let schema: string | undefined;

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => stopWorker(worker, 'SIGKILL')));
    await submitter?.shutdown();
    await storage?.close();
    if (schema !== undefined) await dropSchema(schema);
  });

  it('runs every task of 500 pipelines exactly once, spread over all three runners', { timeout: 300_000 }, async () => {
    schema = freshSchemaName();
    const env = { ORRERY_DATABASE: postgresUrl(), ORRERY_SCHEMA: schema };
    // Started together on a fresh schema: the migration runs once, under the advisory lock.
    const runnerIds = Array.from({ length: RUNNERS }, (_, i) => `many-${i + 1}`);
    workers.push(...(await Promise.all(runnerIds.map((id) => startWorker(id, env)))));

    // A runner that is never started only writes pipelines; the three processes run them.
    submitter = await DefaultRunner.create({
      database: postgresUrl(),
      schema,
      workflows: [manyWorkflow()],
      enableCronScheduling: false,
    });
    const ids: string[] = new Array(PIPELINES);
    for (let first = 0; first < PIPELINES; first += SUBMIT_CONCURRENCY) {
      await Promise.all(
        Array.from({ length: Math.min(SUBMIT_CONCURRENCY, PIPELINES - first) }, async (_, k) => {
          const n = first + k;
          ids[n] = (await submitter!.executeAsync(MANY_WORKFLOW, { n }, { idempotencyKey: `many-${n}` })).id;
        }),
      );
    }
    expect(new Set(ids).size).toBe(PIPELINES);

    storage = await openPostgresStorage({ connectionString: postgresUrl(), schema });
    const store = storage.executions;
    const terminal = async () =>
      (await store.listPipelines({ workflowName: MANY_WORKFLOW, limit: 1000, offset: 0 })).filter(
        (p) => p.status === 'completed' || p.status === 'failed' || p.status === 'cancelled',
      ).length;
    await until('every pipeline to finish', terminal, (finished) => finished === PIPELINES, 240_000);

    // Every runner was alive until here: each task ran once, on attempt 1, and committed once.
    const ranBy = new Map<string, number>();
    for (const [n, id] of ids.entries()) {
      const result = await submitter.getExecutionResult(id);
      expect(result.status, `pipeline ${n}`).toBe('completed');
      expect(result.finalContext.done).toBe(expectedDone(n));
      const tasks = await store.listTasks(id);
      expect(tasks.map((t) => [t.taskId, t.status, t.attempt, t.failedAttempts])).toEqual(
        MANY_TASK_IDS.map((taskId) => [taskId, 'completed', 1, 0]),
      );
      for (const taskId of MANY_TASK_IDS) {
        const record = result.finalContext[`by_${taskId}`] as RunRecord;
        expect(record.attempt).toBe(1);
        expect(runnerIds).toContain(record.runner);
        ranBy.set(record.runner, (ranBy.get(record.runner) ?? 0) + 1);
      }
    }

    const reports = await Promise.all(workers.splice(0).map(stopRunner));
    const totalTasks = PIPELINES * MANY_TASK_IDS.length;
    // Runs started, over all processes, equal the tasks: none ran twice, even where it left no trace.
    expect(reports.reduce((sum, r) => sum + r.runs, 0)).toBe(totalTasks);
    expect(reports.map((r) => r.repeats)).toEqual([0, 0, 0]);
    for (const { runnerId, runs } of reports) {
      expect(ranBy.get(runnerId) ?? 0, runnerId).toBe(runs);
      expect(runs, `${runnerId} ran no task`).toBeGreaterThan(0);
    }
    console.log(`[many-instances] tasks per runner: ${JSON.stringify(Object.fromEntries(ranBy))}`);
  });
});
