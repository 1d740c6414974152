import { ValidationError, WorkflowNotFoundError } from '@orreryjs/core';
import { afterEach, describe, expect, it } from 'vitest';
import { allPipelines, type CronHarness, HOUR, MINUTE, openHarness, SECOND, T0 } from './support/cron-harness.js';

let h: CronHarness;
afterEach(() => h.close());

const at = (ms: number) => new Date(T0.getTime() + ms);

describe('backfill', () => {
  it('hands off every slot of [start, end) once; a second run creates nothing', async () => {
    h = await openHarness();
    await h.cron.addSchedule({ name: 's', workflowName: 'wf', cronExpression: '*/5 * * * *', overlapPolicy: 'skip' });
    h.clock.set(at(2 * HOUR));
    const range = { start: at(HOUR), end: at(HOUR + 30 * MINUTE) };
    expect(await h.cron.backfill('s', range)).toEqual({ created: 6, existing: 0 });
    expect(await h.cron.backfill('s', range)).toEqual({ created: 0, existing: 6 });
    const pipelines = await allPipelines(h.storage);
    expect(pipelines.map((pipeline) => pipeline.scheduledTime)).toEqual(
      Array.from({ length: 6 }, (_, i) => at(HOUR + i * 5 * MINUTE)),
    );
    expect(pipelines[0]!.input).toMatchObject({ scheduled_time: at(HOUR).toISOString(), schedule_name: 's' });
    const history = await h.cron.history('s');
    expect(history.every((row) => row.source === 'backfill' && row.status === 'handed_off')).toBe(true);
    expect(h.eventsOf('cron:fired').map((event) => event.source)).toEqual(Array(6).fill('backfill'));
  });

  it('fills missed slots, counting the slots that already ran as existing', async () => {
    h = await openHarness();
    await h.cron.addSchedule({ name: 's', workflowName: 'wf', cronExpression: '* * * * *', catchupPolicy: 'skip' });
    h.clock.set(at(10 * MINUTE + 30 * SECOND));
    await h.cron.tick();
    // Slots 1..9 missed (one row), slot 10 ran.
    expect(await allPipelines(h.storage)).toHaveLength(1);
    expect(await h.cron.backfill('s', { start: T0, end: at(10 * MINUTE + 1) })).toEqual({ created: 10, existing: 1 });
    const pipelines = await allPipelines(h.storage);
    expect(new Set(pipelines.map((pipeline) => pipeline.scheduledTime!.getTime())).size).toBe(11);
    const history = await h.cron.history('s', { limit: 100 });
    expect(history.filter((row) => row.status === 'missed')).toEqual([]);
    expect(history).toHaveLength(11);
  });

  it('keeps the missed summary of an outage whose first slot was backfilled meanwhile', async () => {
    h = await openHarness();
    await h.cron.addSchedule({ name: 's', workflowName: 'wf', cronExpression: '* * * * *', catchupPolicy: 'skip' });
    h.clock.set(at(10 * MINUTE + 30 * SECOND));
    // During the outage an operator backfills the first slot; then a runner ticks.
    expect(await h.cron.backfill('s', { start: at(MINUTE), end: at(2 * MINUTE) })).toEqual({ created: 1, existing: 0 });
    await h.cron.tick();
    const history = await h.cron.history('s', { limit: 100 });
    const missed = history.filter((row) => row.status === 'missed');
    expect(missed.map((row) => [row.scheduledTime, row.missedCount])).toEqual([[at(2 * MINUTE), 8]]);
    // Every slot 1..10 is accounted for: one backfilled, eight missed, one on time.
    const accounted = history.reduce((sum, row) => sum + (row.status === 'missed' ? row.missedCount : 1), 0);
    expect(accounted).toBe(10);
  });

  it('refuses a range reaching into the future, an empty range or over 10,000 slots, writing nothing', async () => {
    h = await openHarness();
    await h.cron.addSchedule({ name: 's', workflowName: 'wf', cronExpression: '* * * * * *' });
    h.clock.set(at(10 * HOUR));
    await expect(h.cron.backfill('s', { start: at(9 * HOUR), end: at(11 * HOUR) })).rejects.toThrow(/future/);
    await expect(h.cron.backfill('s', { start: at(HOUR), end: at(HOUR) })).rejects.toThrow(ValidationError);
    await expect(h.cron.backfill('s', { start: T0, end: at(3 * HOUR) })).rejects.toThrow(/10000 slots/);
    expect(await h.cron.history('s')).toEqual([]);
  });

  it('refuses a schedule whose workflow this runner has not registered', async () => {
    h = await openHarness({ workflows: ['wf'] });
    await h.cron.addSchedule({ name: 's', workflowName: 'wf', cronExpression: '* * * * *' });
    const admin = h.another({ workflows: [] });
    h.clock.set(at(HOUR));
    await expect(admin.cron.backfill('s', { start: T0, end: at(MINUTE * 2) })).rejects.toThrow(WorkflowNotFoundError);
    await expect(admin.cron.trigger('s')).rejects.toThrow(WorkflowNotFoundError);
    expect(await h.cron.history('s')).toEqual([]);
  });
});

describe('trigger', () => {
  it('fires now as an audited manual occurrence, even when the schedule is disabled', async () => {
    h = await openHarness();
    const schedule = await h.cron.addSchedule({
      name: 's',
      workflowName: 'wf',
      cronExpression: '@yearly',
      enabled: false,
    });
    h.clock.set(at(123_456));
    const first = await h.cron.trigger('s');
    const second = await h.cron.trigger(schedule.id);
    expect(first.id).not.toBe(second.id);
    const pipelines = await allPipelines(h.storage);
    expect(pipelines.map((pipeline) => pipeline.id)).toEqual([first.id, second.id]);
    expect(pipelines[0]!.input).toMatchObject({ scheduled_time: at(123_456).toISOString(), schedule_id: schedule.id });
    const history = await h.cron.history('s');
    expect(history.map((row) => [row.source, row.status, row.scheduledTime])).toEqual([
      ['manual', 'handed_off', at(123_456)],
      ['manual', 'handed_off', at(123_456)],
    ]);
    expect(h.eventsOf('cron:fired').map((event) => [event.source, event.lagMs])).toEqual([
      ['manual', 0],
      ['manual', 0],
    ]);
  });
});
