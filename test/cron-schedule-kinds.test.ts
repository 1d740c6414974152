/**
 * The new schedule kinds through real runner processes: schedules declared with
 * syncCronSchedules by an admin runner that never starts, then fired by two runner processes
 * sharing the database. An `@every` interval must fire at epoch-aligned slots, each exactly
 * once whichever process claims it; a 7-field one-off (a year) fires once and is left with no
 * next run, still enabled and listed.
 */
import type { Storage } from '@orreryjs/core';
import type { CronSchedule } from '@orreryjs/cron';
import { DefaultRunner } from '@orreryjs/runner';
import { afterEach, describe, expect, it } from 'vitest';
import {
  auditLedger,
  isSettled,
  pendingWork,
  spawnWorker,
  TARGETS,
  type Target,
  wholeSecondIn,
} from './fixtures/cron-processes.js';
import { CRON_WORKFLOW, cronTick } from './fixtures/cron-workflow.js';
import { stopWorker, until, type Worker } from './support/processes.js';

const DAY_MS = 86_400_000;
const EVERY_MS = 2_000;
const RUNNER_CONFIG = JSON.stringify({ cronPollIntervalMs: 200, pollIntervalMs: 100 });

/** A 7-field expression (seconds first, year last) that matches `at` (UTC, whole second) only. */
function oneOffExpression(at: Date): string {
  return [
    at.getUTCSeconds(),
    at.getUTCMinutes(),
    at.getUTCHours(),
    at.getUTCDate(),
    at.getUTCMonth() + 1,
    '*',
    at.getUTCFullYear(),
  ].join(' ');
}

describe.each(TARGETS)('schedule kinds fired by two runner processes on $name', ({ make }) => {
  let target: Target | undefined;
  let storage: Storage | undefined;
  let workers: Worker[] = [];

  afterEach(async () => {
    await Promise.all(workers.map((worker) => stopWorker(worker, 'SIGKILL')));
    workers = [];
    await storage?.close();
    storage = undefined;
    await target?.remove();
    target = undefined;
  });

  it('fires @every 2s at epoch-aligned slots exactly once each, and a 7-field one-off once', async () => {
    target = make();
    const everyEnd = wholeSecondIn(8_000);
    const oneOffAt = wholeSecondIn(4_000);
    const admin = await DefaultRunner.create({
      database: target.env.ORRERY_DATABASE!,
      ...(target.env.ORRERY_SCHEMA ? { schema: target.env.ORRERY_SCHEMA } : {}),
      workflows: [cronTick],
      enableCronScheduling: false,
    });
    let schedules: CronSchedule[];
    try {
      const plan = await admin.syncCronSchedules([
        { name: 'every-2s', workflowName: CRON_WORKFLOW, cronExpression: '@every 2s', endAt: everyEnd },
        {
          name: 'one-off',
          workflowName: CRON_WORKFLOW,
          cronExpression: oneOffExpression(oneOffAt),
          // auditLedger expects every slot of [nextRunAt, endAt): the year allows only one.
          endAt: new Date(oneOffAt.getTime() + DAY_MS),
        },
      ]);
      expect(plan).toEqual({ created: ['every-2s', 'one-off'], updated: [], unchanged: [], pruned: [] });
      schedules = [await admin.getCronSchedule('every-2s'), await admin.getCronSchedule('one-off')];
    } finally {
      await admin.shutdown();
    }
    expect(schedules[1]!.nextRunAt).toEqual(oneOffAt);

    const env = { ...target.env, ORRERY_RUNNER_CONFIG: RUNNER_CONFIG };
    workers = [spawnWorker('cron-runner-worker.ts', [], env), spawnWorker('cron-runner-worker.ts', [], env)];
    await Promise.all(workers.map((worker) => worker.ready));
    storage = await target.open();
    const ids = schedules.map((schedule) => schedule.id);
    await until('both schedules to run out of slots and settle', () => pendingWork(storage!, ids), isSettled, 90_000);
    const exits = await Promise.all(workers.map((worker) => stopWorker(worker, 'SIGTERM')));
    expect(exits, workers.map((worker) => worker.stderr()).join('\n')).toEqual([
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);

    // One handed-off row and one completed pipeline per expected slot, and nothing else.
    const { problems, ...counts } = await auditLedger(storage, schedules, CRON_WORKFLOW);
    expect(problems).toEqual([]);
    const everyRows = await storage.cron.listOccurrences(schedules[0]!.id, 1_000, 0);
    expect(everyRows.length).toBeGreaterThanOrEqual(2);
    expect(everyRows.filter((row) => row.scheduledTime.getTime() % EVERY_MS !== 0)).toEqual([]);
    const oneOffRows = await storage.cron.listOccurrences(schedules[1]!.id, 1_000, 0);
    expect(oneOffRows.map((row) => row.scheduledTime)).toEqual([oneOffAt]);
    expect(counts.ledgerRows).toBe(everyRows.length + 1);
    expect(await storage.cron.getSchedule(schedules[1]!.id)).toMatchObject({ enabled: true, nextRunAt: null });
  }, 150_000);
});
