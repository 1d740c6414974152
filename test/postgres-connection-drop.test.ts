/**
 * A Postgres runner whose connections are terminated under it (`pg_terminate_backend`, as a
 * failover or an operator would) must keep running: the unit of work in flight fails with a
 * DatabaseError, the loop backs off, the broken connection is discarded, and no occurrence is
 * lost or run twice. Before every checked-out connection had an 'error' listener, the first
 * connection dropped inside a transaction killed the process with an unhandled 'error' event.
 */
import { randomBytes } from 'node:crypto';
import type { Storage } from '@orreryjs/core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  addSchedules,
  auditLedger,
  isSettled,
  pendingWork,
  postgresTarget,
  type Target,
  wholeSecondIn,
} from './fixtures/cron-processes.js';
import { CRON_WORKFLOW } from './fixtures/cron-workflow.js';
import { terminateBackends } from './support/backends.js';
import { postgresUrl } from './support/postgres.js';
import { isAlive, sleep, spawnFixture, stopWorker, until, type Worker } from './support/processes.js';

/** The workload's workflow in connection-drop-worker.ts (not imported: importing it would start its runner here). */
const DROP_CHAIN = 'drop-chain';
const SCHEDULES = 60;
const RUN_MS = 15_000;

describe('a Postgres runner whose connections are terminated under it', () => {
  let worker: Worker | undefined;
  let target: Target | undefined;
  let storage: Storage | undefined;

  afterEach(async () => {
    if (worker !== undefined && isAlive(worker)) await stopWorker(worker, 'SIGKILL');
    worker = undefined;
    await storage?.close();
    storage = undefined;
    await target?.remove();
    target = undefined;
  });

  it('stays alive, and every per-second occurrence still gets exactly one pipeline', async () => {
    target = postgresTarget();
    const applicationName = `orrery-drop-${randomBytes(4).toString('hex')}`;
    const endAt = wholeSecondIn(RUN_MS);
    const schedules = await addSchedules(target, SCHEDULES, (i) => ({
      cronExpression: '* * * * * *',
      endAt,
      // Half take the two-phase handoff (jitter), half hand off inside the claim transaction.
      ...(i % 2 === 0 ? { jitterMs: 500 } : {}),
    }));
    storage = await target.open();
    worker = spawnFixture('connection-drop-worker.ts', [], {
      ...target.env,
      ORRERY_WORKLOAD_MS: String(RUN_MS),
      ORRERY_RUNNER_CONFIG: JSON.stringify({
        applicationName,
        cronPollIntervalMs: 200,
        cronLostThresholdMs: 2000,
        cronRecoveryIntervalMs: 500,
        cronMaxRecoveryAttempts: 10,
        pollIntervalMs: 100,
        taskLeaseMs: 2000,
      }),
    });
    await worker.ready;

    let terminated = 0;
    while (Date.now() < endAt.getTime() + 2000) {
      terminated += await terminateBackends(postgresUrl(), applicationName);
      expect(isAlive(worker), `the runner died: ${worker.stderr()}`).toBe(true);
      await sleep(100 + Math.floor(Math.random() * 200));
    }
    const running = worker;
    const workload = await until(
      'the workload to end',
      async () => running.messages.find((message) => 'workload' in message)?.workload,
      (value) => value !== undefined,
    );
    const ids = schedules.map((schedule) => schedule.id);
    await until('the ledger to settle', () => pendingWork(storage!, ids), isSettled, 90_000);
    expect(isAlive(worker), `the runner died: ${worker.stderr()}`).toBe(true);
    expect(await stopWorker(worker, 'SIGTERM'), worker.stderr()).toEqual({ code: 0, signal: null });

    const audit = await auditLedger(storage, schedules, CRON_WORKFLOW);
    const { problems, ...counts } = audit;
    console.log(`[connection drop] ${JSON.stringify({ terminated, workload, ...counts, problems: problems.length })}`);
    // The connections were really dropped, many times, while work was in flight.
    expect(terminated).toBeGreaterThanOrEqual(20);
    expect(problems.slice(0, 30), `${problems.length} problems`).toEqual([]);
    expect(audit.occurrences).toBeGreaterThanOrEqual(SCHEDULES * ((RUN_MS - 1000) / 1000));
    expect(audit.pipelines).toBe(audit.occurrences);

    // The workload: one pipeline per idempotency key, every one of them finished.
    const { pipelines } = workload as { pipelines: number };
    const chains = await storage.executions.listPipelines({ workflowName: DROP_CHAIN, limit: 100_000, offset: 0 });
    expect(pipelines).toBeGreaterThan(0);
    expect(new Set(chains.map((pipeline) => pipeline.idempotencyKey)).size).toBe(chains.length);
    expect(chains.length).toBe(pipelines);
    expect(chains.filter((pipeline) => !['completed', 'cancelled'].includes(pipeline.status))).toEqual([]);
  }, 180_000);
});
