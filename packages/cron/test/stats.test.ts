import { OrreryError } from '@orreryjs/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type CronHarness, HOUR, MINUTE, openHarness, SECOND, T0 } from './support/cron-harness.js';

let h: CronHarness;
afterEach(() => h.close());

const at = (ms: number) => new Date(T0.getTime() + ms);

describe('stats', () => {
  it('counts each ledger status since a time, with the success rate and delays', async () => {
    let crashNext = false;
    h = await openHarness({
      settings: { misfireThresholdMs: 90 * SECOND },
      faults: {
        afterPhase1: () => {
          if (crashNext) throw new OrreryError('SIMULATED_CRASH', 'crash');
        },
      },
    });
    await h.cron.addSchedule({ name: 'ok', workflowName: 'wf', cronExpression: '* * * * *', catchupPolicy: 'skip' });
    await h.cron.addSchedule({ name: 'busy', workflowName: 'wf', cronExpression: '* * * * *', overlapPolicy: 'skip' });
    // 00:05:10, slots 1..5: 1..3 are over 90 s late. 'ok' (skip): a missed row for 1..3, runs 4 (70 s late) and 5.
    // 'busy' (run_once): a missed row for 1..2, runs 3 as catch-up, skips 4 and 5 for overlap.
    h.clock.set(at(5 * MINUTE + 10 * SECOND));
    await h.cron.tick();
    crashNext = true;
    h.clock.set(at(6 * MINUTE));
    await expect(h.cron.tick()).rejects.toThrow('crash');
    // 'ok' at 6:00 is claimed and lost; 'busy' at 6:00 was skipped (overlap).
    h.clock.set(at(7 * MINUTE + 1));
    const stats = await h.cron.stats({ since: T0 });
    expect(stats).toMatchObject({
      totalExecutions: 3 + 4 + 1 + 1,
      successfulExecutions: 3,
      lostExecutions: 1,
      skippedExecutions: 3,
      missedExecutions: 2,
      abandonedExecutions: 0,
    });
    expect(stats.successRate).toBeCloseTo(75);
    // Delays of the handed-off rows: 70 s and 10 s for 'ok', 130 s for the 'busy' catch-up of slot 3.
    expect(stats.meanDelayMs).toBeCloseTo((70_000 + 10_000 + 130_000) / 3);
    expect(stats.p99DelayMs).toBe(130_000);
    expect(await h.cron.stats({ since: at(6 * MINUTE) })).toMatchObject({ totalExecutions: 2, lostExecutions: 1 });
  });

  it('defaults since to 24 hours ago and reports no success rate (null) when nothing ran', async () => {
    h = await openHarness();
    await h.cron.addSchedule({ name: 's', workflowName: 'wf', cronExpression: '* * * * *' });
    h.clock.set(at(MINUTE));
    await h.cron.tick();
    h.clock.set(at(25 * HOUR));
    expect(await h.cron.stats()).toEqual({
      totalExecutions: 0,
      successfulExecutions: 0,
      lostExecutions: 0,
      skippedExecutions: 0,
      missedExecutions: 0,
      abandonedExecutions: 0,
      successRate: null,
      meanDelayMs: null,
      p99DelayMs: null,
    });
  });
});

describe('recoveryStats', () => {
  it('counts attempts, successes, failures and abandonments', async () => {
    h = await openHarness({ settings: { maxRecoveryAttempts: 1 } });
    for (const name of ['a', 'b']) await h.cron.addSchedule({ name, workflowName: 'wf', cronExpression: '* * * * *' });
    expect(await h.cron.recoveryStats()).toEqual({
      totalRecoveryAttempts: 0,
      successfulRecoveries: 0,
      failedRecoveries: 0,
      abandonedRecoveries: 0,
      recoverySuccessRate: null,
    });
    // Both handoffs fail; in recovery, the first attempt at one fails too, and it is then abandoned.
    h.executor.failNext.push(new Error('x'), new Error('x'), new Error('x'));
    h.clock.set(at(MINUTE));
    await h.cron.tick();
    h.clock.set(at(2 * MINUTE + SECOND));
    expect(await h.cron.recover()).toEqual({ recovered: 1, abandoned: 0, retried: 1, released: 0 });
    h.clock.advance(10 * MINUTE);
    expect(await h.cron.recover()).toEqual({ recovered: 0, abandoned: 1, retried: 0, released: 0 });
    expect(await h.cron.recoveryStats()).toEqual({
      totalRecoveryAttempts: 3,
      successfulRecoveries: 1,
      failedRecoveries: 2,
      abandonedRecoveries: 1,
      recoverySuccessRate: 100 / 3,
    });
  });
});
