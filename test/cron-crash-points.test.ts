/**
 * Guarantee 2 ("no loss") and 1 ("no duplicates") with real processes killed by SIGKILL at each
 * step of the cron cycle: a child runner dies after phase 1, after the handoff, or inside
 * recovery; a healthy runner started afterwards must bring every occurrence of the schedules
 * to exactly one pipeline, linked in the ledger (`handed_off`).
 */
import type { Storage } from '@orreryjs/core';
import type { CronSchedule } from '@orreryjs/cron';
import { afterEach, describe, expect, it } from 'vitest';
import {
  addSchedules,
  auditLedger,
  isSettled,
  pendingWork,
  spawnWorker,
  TARGETS,
  type Target,
  wholeSecondIn,
} from './fixtures/cron-processes.js';
import { stopWorker, until, type Worker } from './support/processes.js';

/** The survivor: recovery within the test, not after a minute. */
const HEALTHY_CONFIG = JSON.stringify({
  cronPollIntervalMs: 200,
  cronLostThresholdMs: 1000,
  cronRecoveryIntervalMs: 500,
  pollIntervalMs: 50,
  taskLeaseMs: 2000,
});
const SCHEDULES = 3;
/** Each schedule fires every second over a window this long from the next whole second. */
const WINDOW_MS = 6000;

interface CrashReport {
  point: string;
  occurrenceIds?: string[];
  occurrenceId?: string;
  pipelineExecutionId?: string | null;
  pipelineExecutionIds?: string[];
}

describe.each(TARGETS)('cron crash points with real processes on $name', ({ make }) => {
  const workers: Worker[] = [];
  let target: Target | undefined;
  let storage: Storage | undefined;

  afterEach(async () => {
    for (const worker of workers.splice(0)) await stopWorker(worker, 'SIGKILL');
    await storage?.close();
    storage = undefined;
    await target?.remove();
    target = undefined;
  });

  /** Adds the schedules: `* * * * * *` from the next whole second for WINDOW_MS. */
  async function setUp(overlapPolicy: 'allow' | 'buffer_all' | 'cancel_other' = 'allow'): Promise<CronSchedule[]> {
    target = make();
    const endAt = wholeSecondIn(WINDOW_MS);
    const schedules = await addSchedules(target, SCHEDULES, () => ({
      cronExpression: '* * * * * *',
      endAt,
      overlapPolicy,
    }));
    storage = await target.open();
    return schedules;
  }

  /** Runs the crash worker to its crash point; resolves with what it reported just before SIGKILL. */
  async function crashAt(point: string): Promise<CrashReport> {
    const worker = spawnWorker('cron-crash-worker.ts', [point], target!.env);
    workers.push(worker);
    const exit = await Promise.race([
      worker.exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`the ${point} worker did not crash: ${worker.stderr()}`)), 60_000),
      ),
    ]);
    expect(exit, worker.stderr()).toEqual({ code: null, signal: 'SIGKILL' });
    const report = worker.messages.find((message) => message.point === point);
    expect(report, `no crash report; stderr: ${worker.stderr()}`).toBeDefined();
    return report as unknown as CrashReport;
  }

  /** Starts a healthy runner, waits until every slot ran and every pipeline ended, and stops it gracefully. */
  async function runHealthy(schedules: readonly CronSchedule[]): Promise<void> {
    const healthy = spawnWorker('cron-runner-worker.ts', [], { ...target!.env, ORRERY_RUNNER_CONFIG: HEALTHY_CONFIG });
    workers.push(healthy);
    await healthy.ready;
    const ids = schedules.map((schedule) => schedule.id);
    await until('the ledger to settle', () => pendingWork(storage!, ids), isSettled, 90_000);
    expect(await stopWorker(healthy), healthy.stderr()).toEqual({ code: 0, signal: null });
  }

  /** {@link runHealthy}, then the exactly-once audit of every slot. */
  async function survive(schedules: readonly CronSchedule[], crashedRows: number) {
    await runHealthy(schedules);
    const audit = await auditLedger(storage!, schedules);
    expect(audit.problems).toEqual([]);
    expect(audit.ledgerRows).toBe(audit.occurrences);
    expect(audit.pipelines).toBe(audit.occurrences);
    const { problems, ...counts } = audit;
    console.log(
      `[cron crash points] ${expect.getState().currentTestName}: ${JSON.stringify({ crashedRows, ...counts })}`,
    );
    return audit;
  }

  it('recovers the rows claimed by a runner killed after phase 1, starting one pipeline each', async () => {
    const schedules = await setUp();
    const crash = await crashAt('after-phase1');
    const lost = crash.occurrenceIds!;
    expect(lost.length).toBeGreaterThanOrEqual(1);
    for (const id of lost) {
      expect((await storage!.cron.getOccurrence(id))?.status).toBe('claimed');
      expect(await storage!.executions.getPipelineByIdempotencyKey(id)).toBeNull();
    }

    const audit = await survive(schedules, lost.length);
    for (const id of lost) {
      const row = await storage!.cron.getOccurrence(id);
      expect(row).toMatchObject({ status: 'handed_off', recovered: true, recoveryAttempts: 1 });
      const pipeline = await storage!.executions.getPipeline(row!.pipelineExecutionId!);
      expect(pipeline?.input).toMatchObject({ is_recovery: true, recovery_attempt: 1 });
    }
    // At least: a row the survivor claims on the two-phase path more than cronLostThresholdMs after its
    // fire time is at once "lost" too, and may be linked by recovery rather than by phase 2.
    expect(audit.recovered).toBeGreaterThanOrEqual(lost.length);
  });

  it('links the pipeline a runner killed after the handoff had started, instead of starting another', async () => {
    const schedules = await setUp();
    const crash = await crashAt('after-handoff');
    const id = crash.occurrenceId!;
    expect((await storage!.cron.getOccurrence(id))?.status).toBe('claimed');
    expect((await storage!.executions.getPipelineByIdempotencyKey(id))?.id).toBe(crash.pipelineExecutionId);

    await survive(schedules, 1);
    const row = await storage!.cron.getOccurrence(id);
    expect(row).toMatchObject({
      status: 'handed_off',
      recovered: true,
      pipelineExecutionId: crash.pipelineExecutionId,
    });
    const pipeline = await storage!.executions.getPipeline(crash.pipelineExecutionId!);
    expect(pipeline?.input).not.toHaveProperty('is_recovery');
  });

  it('finishes a recovery whose runner was killed after the re-handoff, with no second pipeline', async () => {
    const schedules = await setUp();
    const first = await crashAt('after-phase1');
    expect(first.occurrenceIds!.length).toBeGreaterThanOrEqual(1);
    const crash = await crashAt('during-recovery');
    const id = crash.occurrenceId!;
    expect(first.occurrenceIds).toContain(id);
    expect(crash.pipelineExecutionId).toEqual(expect.any(String));
    expect(await storage!.cron.getOccurrence(id)).toMatchObject({ status: 'claimed', recoveryAttempts: 1 });

    const audit = await survive(schedules, first.occurrenceIds!.length);
    const row = await storage!.cron.getOccurrence(id);
    expect(row).toMatchObject({
      status: 'handed_off',
      recovered: true,
      recoveryAttempts: 2,
      pipelineExecutionId: crash.pipelineExecutionId,
    });
    const pipeline = await storage!.executions.getPipeline(crash.pipelineExecutionId!);
    expect(pipeline?.input).toMatchObject({ is_recovery: true, recovery_attempt: 1 });
    expect(audit.recovered).toBeGreaterThanOrEqual(first.occurrenceIds!.length);
  });

  it('hands off exactly once a slot buffered behind an active one when its runner was killed', async () => {
    // The crash worker never runs tasks, so its first pipeline stays pending and later slots wait, buffered.
    const schedules = await setUp('buffer_all');
    const crash = await crashAt('while-buffered');
    const id = crash.occurrenceId!;
    expect(await storage!.cron.getOccurrence(id)).toMatchObject({ status: 'buffered', pipelineExecutionId: null });

    await survive(schedules, 1);
    const row = await storage!.cron.getOccurrence(id);
    expect(row).toMatchObject({ status: 'handed_off' });
    const pipeline = await storage!.executions.getPipeline(row!.pipelineExecutionId!);
    expect(pipeline).toMatchObject({ status: 'completed', scheduledTime: row!.scheduledTime, idempotencyKey: id });
  });

  it('cancels with the claim the pipelines a cancel_other slot replaced, though its runner was killed right after', async () => {
    // The crash worker never runs tasks: each schedule's first pipeline stays pending (active), the next slot replaces it.
    const schedules = await setUp('cancel_other');
    const crash = await crashAt('after-replace');
    const replaced = crash.pipelineExecutionIds!;
    expect(replaced.length).toBeGreaterThanOrEqual(1);
    for (const id of replaced) expect((await storage!.executions.getPipeline(id))?.status).toBe('cancelled');
    // No later slot may cancel them instead: the schedules stop here, and a fresh runner runs what is left.
    for (const schedule of schedules) {
      const row = (await storage!.cron.getSchedule(schedule.id))!;
      await storage!.cron.updateSchedule(row.id, row.version, { enabled: false, nextRunAt: null });
    }
    await runHealthy(schedules);
    for (const id of replaced) {
      expect((await storage!.executions.getPipeline(id))?.status).toBe('cancelled');
      for (const task of await storage!.executions.listTasks(id))
        expect(task).toMatchObject({ status: 'cancelled', startedAt: null });
    }
    // Each replaced schedule ran one pipeline to its end: the one that replaced the cancelled one.
    for (const schedule of schedules) {
      const pipelines = await storage!.executions.listPipelines({ scheduleId: schedule.id, limit: 100, offset: 0 });
      if (!pipelines.some((pipeline) => replaced.includes(pipeline.id))) continue;
      expect(pipelines.filter((pipeline) => pipeline.status === 'completed')).toHaveLength(1);
    }
  });
});
