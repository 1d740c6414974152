import { sleep } from '@orreryjs/core';
import { afterEach, describe, expect, it } from 'vitest';
import { allPipelines, type CronHarness, MINUTE, openHarness, T0 } from './support/cron-harness.js';

let h: CronHarness;
afterEach(() => h.close());

async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await sleep(5);
}

describe('CronService loops', () => {
  it('runs the tick and recovery loops between start() and stop()', async () => {
    h = await openHarness({ settings: { pollIntervalMs: 10, recoveryIntervalMs: 10 } });
    await h.cron.addSchedule({ name: 's', workflowName: 'wf', cronExpression: '* * * * *' });
    expect(h.cron.health()).toEqual({
      schedulerRunning: false,
      recoveryRunning: false,
      lastTickAt: null,
      lastRecoveryAt: null,
    });
    h.clock.set(new Date(T0.getTime() + MINUTE));
    h.cron.start();
    h.cron.start();
    await until(async () => (await allPipelines(h.storage)).length === 1);
    await until(() => h.cron.health().lastRecoveryAt !== null);
    expect(h.cron.health()).toMatchObject({ schedulerRunning: true, recoveryRunning: true });
    await h.cron.stop();
    await h.cron.stop();
    expect(h.cron.health()).toMatchObject({ schedulerRunning: false, recoveryRunning: false });
  });

  it('wakes the tick at the next known slot instead of waiting out the poll interval', async () => {
    h = await openHarness({ settings: { pollIntervalMs: 600_000, enableRecovery: false } });
    h.cron.start();
    await until(() => h.cron.health().lastTickAt !== null);
    await h.cron.addSchedule({ name: 's', workflowName: 'wf', cronExpression: '* * * * * *' });
    for (let second = 1; second <= 2; second += 1) {
      h.clock.set(new Date(T0.getTime() + second * 1000));
      await until(async () => (await allPipelines(h.storage)).length === second);
    }
    await h.cron.stop();
  });

  it('starts no loop when scheduling and recovery are disabled, and still manages schedules', async () => {
    h = await openHarness({ settings: { enableScheduling: false, enableRecovery: false } });
    h.cron.start();
    expect(h.cron.health()).toMatchObject({ schedulerRunning: false, recoveryRunning: false });
    await h.cron.addSchedule({ name: 's', workflowName: 'wf', cronExpression: '* * * * *' });
    expect(await h.cron.listSchedules()).toHaveLength(1);
  });

  it('keeps ticking when a listener throws', async () => {
    h = await openHarness();
    await h.cron.addSchedule({ name: 's', workflowName: 'wf', cronExpression: '* * * * *' });
    const throwing = h.another({ runnerId: 'runner-a' });
    throwing.events.push = () => {
      throw new Error('listener failed');
    };
    h.clock.set(new Date(T0.getTime() + MINUTE));
    expect(await throwing.cron.tick()).toEqual({ claimed: 1, handedOff: 1 });
  });
});
