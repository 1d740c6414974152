import { occurrenceId } from '@orreryjs/core';
import { afterEach, describe, expect, it } from 'vitest';
import { CRON_DEFAULTS, type CronScheduleInput } from '../src/index.js';
import {
  allPipelines,
  type CronHarness,
  type HarnessOptions,
  HOUR,
  MINUTE,
  openHarness,
  SECOND,
  T0,
} from './support/cron-harness.js';

let h: CronHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const at = (ms: number) => new Date(T0.getTime() + ms);

async function setUp(input: Partial<CronScheduleInput> = {}, options: HarnessOptions = {}) {
  h = await openHarness(options);
  const schedule = await h.cron.addSchedule({ name: 's', workflowName: 'wf', cronExpression: '* * * * *', ...input });
  return { h, schedule };
}

describe('on-time occurrences', () => {
  it('claims, hands off and links an occurrence with the schedule keys overriding user keys', async () => {
    const { h, schedule } = await setUp({ context: { user: 1, schedule_id: 'mine' } });
    h.clock.set(at(MINUTE + 250));
    expect(await h.cron.tick()).toEqual({ claimed: 1, handedOff: 1 });
    const [pipeline] = await allPipelines(h.storage);
    expect(pipeline!.input).toEqual({
      user: 1,
      scheduled_time: at(MINUTE).toISOString(),
      schedule_id: schedule.id,
      schedule_name: 's',
      schedule_timezone: 'UTC',
      cron_expression: '0 * * * * *',
    });
    expect(pipeline).toMatchObject({
      idempotencyKey: occurrenceId(schedule.id, at(MINUTE)),
      scheduledTime: at(MINUTE),
    });
    const [row] = await h.cron.history('s');
    expect(row).toMatchObject({
      status: 'handed_off',
      source: 'schedule',
      scheduledTime: at(MINUTE),
      pipelineExecutionId: pipeline!.id,
      handedOffAt: at(MINUTE + 250),
    });
    expect(h.eventsOf('cron:fired')).toEqual([
      {
        scheduleId: schedule.id,
        scheduleName: 's',
        occurrenceId: row!.id,
        scheduledTime: at(MINUTE),
        source: 'schedule',
        pipelineExecutionId: pipeline!.id,
        lagMs: 250,
      },
    ]);
    const after = await h.cron.getSchedule('s');
    expect(after).toMatchObject({ nextRunAt: at(2 * MINUTE), lastRunAt: at(MINUTE) });
  });

  it('does nothing before the first slot, and fires a seconds expression every slot', async () => {
    const { h } = await setUp({ cronExpression: '*/10 * * * * *' });
    h.clock.set(at(9 * SECOND));
    expect(await h.cron.tick()).toEqual({ claimed: 0, handedOff: 0 });
    for (let second = 10; second <= 60; second += 10) {
      h.clock.set(at(second * SECOND));
      expect(await h.cron.tick()).toEqual({ claimed: 1, handedOff: 1 });
    }
    expect(await allPipelines(h.storage)).toHaveLength(6);
  });

  it('claims nothing for disabled schedules or workflows this runner has not registered', async () => {
    h = await openHarness({ workflows: ['wf', 'elsewhere'] });
    await h.cron.addSchedule({ name: 'off', workflowName: 'wf', cronExpression: '* * * * *', enabled: false });
    await h.cron.addSchedule({ name: 'foreign', workflowName: 'elsewhere', cronExpression: '* * * * *' });
    const local = h.another({ workflows: ['wf'] });
    h.clock.set(at(MINUTE));
    expect(await local.cron.tick()).toEqual({ claimed: 0, handedOff: 0 });
    expect(await h.cron.tick()).toEqual({ claimed: 1, handedOff: 1 });
  });
});

describe('a burst of due schedules', () => {
  it('claims what is due, up to maxOccurrencesPerTick, from the first tick on, whatever batchSize', async () => {
    h = await openHarness({ settings: { batchSize: 2, maxOccurrencesPerTick: 8 } });
    for (let i = 0; i < 20; i += 1) {
      await h.cron.addSchedule({ name: `s${i}`, workflowName: 'wf', cronExpression: '* * * * *' });
    }
    h.clock.set(at(MINUTE));
    const claimed: number[] = [];
    for (let tick = 0; tick < 4; tick += 1) claimed.push((await h.cron.tick()).claimed);
    expect(claimed).toEqual([8, 8, 4, 0]);
    // Five due: one claim of all five, more than batchSize.
    for (let i = 5; i < 20; i += 1) await h.cron.updateSchedule(`s${i}`, { enabled: false });
    h.clock.set(at(2 * MINUTE));
    expect((await h.cron.tick()).claimed).toBe(5);
    const pipelines = await allPipelines(h.storage);
    expect(pipelines).toHaveLength(25);
    expect(new Set(pipelines.map((pipeline) => pipeline.idempotencyKey)).size).toBe(25);
  });
});

describe('several runners', () => {
  it('hand off each occurrence once when they tick at the same time', async () => {
    // Claims of at most 7 (a tick claims what is due up to maxOccurrencesPerTick): every runner gets some of the 30.
    h = await openHarness({ settings: { maxOccurrencesPerTick: 7 } });
    for (let i = 0; i < 30; i += 1) {
      await h.cron.addSchedule({ name: `s${i}`, workflowName: 'wf', cronExpression: '*/20 * * * * *' });
    }
    const others = [await h.anotherProcess({ runnerId: 'b' }), await h.anotherProcess({ runnerId: 'c' })];
    const runners = [h, ...others];
    for (let slot = 1; slot <= 3; slot += 1) {
      h.clock.set(at(slot * 20 * SECOND));
      for (let round = 0; round < 6; round += 1) await Promise.all(runners.map((runner) => runner.cron.tick()));
    }
    const pipelines = await allPipelines(h.storage);
    expect(pipelines).toHaveLength(90);
    expect(new Set(pipelines.map((pipeline) => pipeline.idempotencyKey)).size).toBe(90);
    const fired = runners.flatMap((runner) => runner.eventsOf('cron:fired'));
    expect(fired).toHaveLength(90);
    expect(runners.every((runner) => runner.eventsOf('cron:fired').length > 0)).toBe(true);
  });
});

describe('catch-up after a one-hour outage', () => {
  // Every minute from T0+1m; the runner comes back at T0+60m30s: slots 1..59 are late by more than the
  // 60 s misfire threshold, slot 60 is 30 s late and on time.
  const RETURN = at(HOUR + 30 * SECOND);

  it('skip: records the 59 missed slots in one missed row and runs only the on-time slot', async () => {
    const { h } = await setUp({ catchupPolicy: 'skip' });
    h.clock.set(RETURN);
    expect(await h.cron.tick()).toEqual({ claimed: 1, handedOff: 1 });
    const history = await h.cron.history('s');
    expect(history.map((row) => [row.status, row.source, row.scheduledTime, row.missedCount])).toEqual([
      ['handed_off', 'schedule', at(HOUR), 0],
      ['missed', 'catchup', at(MINUTE), 59],
    ]);
    expect(await allPipelines(h.storage)).toHaveLength(1);
    expect((await h.cron.getSchedule('s')).nextRunAt).toEqual(at(61 * MINUTE));
  });

  it('run_once: runs the latest missed slot once, then the on-time slot', async () => {
    const { h } = await setUp({ catchupPolicy: 'run_once' });
    h.clock.set(RETURN);
    expect(await h.cron.tick()).toEqual({ claimed: 2, handedOff: 2 });
    const history = await h.cron.history('s');
    expect(history.map((row) => [row.status, row.source, row.scheduledTime, row.missedCount])).toEqual([
      ['handed_off', 'schedule', at(HOUR), 0],
      ['handed_off', 'catchup', at(59 * MINUTE), 0],
      ['missed', 'catchup', at(MINUTE), 58],
    ]);
    const pipelines = await allPipelines(h.storage);
    expect(pipelines.map((pipeline) => pipeline.scheduledTime)).toEqual([at(59 * MINUTE), at(HOUR)]);
  });

  it('run_all: runs every missed slot, oldest first', async () => {
    const { h } = await setUp({ catchupPolicy: 'run_all' });
    h.clock.set(RETURN);
    expect(await h.cron.tick()).toEqual({ claimed: 60, handedOff: 60 });
    const pipelines = await allPipelines(h.storage);
    expect(pipelines.map((pipeline) => pipeline.scheduledTime)).toEqual(
      Array.from({ length: 60 }, (_, i) => at((i + 1) * MINUTE)),
    );
    const sources = (await h.cron.history('s', { limit: 1000 })).map((row) => row.source);
    expect(sources.filter((source) => source === 'catchup')).toHaveLength(59);
  });

  it('run_all: drains a backlog larger than maxCatchupExecutions over several ticks', async () => {
    const { h } = await setUp({ catchupPolicy: 'run_all' }, { settings: { maxCatchupExecutions: 25 } });
    h.clock.set(RETURN);
    expect(await h.cron.tick()).toEqual({ claimed: 25, handedOff: 25 });
    expect((await h.cron.getSchedule('s')).nextRunAt).toEqual(at(26 * MINUTE));
    expect(await h.cron.tick()).toEqual({ claimed: 25, handedOff: 25 });
    // 9 catch-up slots left, then the on-time one.
    expect(await h.cron.tick()).toEqual({ claimed: 10, handedOff: 10 });
    expect(await h.cron.tick()).toEqual({ claimed: 0, handedOff: 0 });
    const pipelines = await allPipelines(h.storage);
    expect(new Set(pipelines.map((pipeline) => pipeline.scheduledTime!.getTime())).size).toBe(60);
  });

  it('run_all: drops slots older than maxCatchupAgeMs into one missed row', async () => {
    const { h } = await setUp({ catchupPolicy: 'run_all' }, { settings: { maxCatchupAgeMs: 30 * MINUTE } });
    h.clock.set(RETURN);
    // Older than 00:30:30 are slots 1..30; 31..60 run.
    expect(await h.cron.tick()).toEqual({ claimed: 30, handedOff: 30 });
    const missed = (await h.cron.history('s', { limit: 100 })).filter((row) => row.status === 'missed');
    expect(missed).toEqual([expect.objectContaining({ scheduledTime: at(MINUTE), missedCount: 30 })]);
  });

  it('spreads a global maxOccurrencesPerTick over schedules and resumes where each stopped', async () => {
    h = await openHarness({ settings: { maxOccurrencesPerTick: 50 } });
    for (const name of ['a', 'b', 'c']) {
      await h.cron.addSchedule({ name, workflowName: 'wf', cronExpression: '* * * * *', catchupPolicy: 'run_all' });
    }
    h.clock.set(RETURN);
    let total = 0;
    for (let tick = 0; tick < 10; tick += 1) {
      const { claimed } = await h.cron.tick();
      expect(claimed).toBeLessThanOrEqual(50);
      total += claimed;
    }
    expect(total).toBe(180);
    expect(await allPipelines(h.storage)).toHaveLength(180);
  });
});

describe('overlapPolicy skip', () => {
  it('skips an occurrence while the previous pipeline is running, and fires again once it ended', async () => {
    const { h, schedule } = await setUp({ overlapPolicy: 'skip' });
    h.clock.set(at(MINUTE));
    expect(await h.cron.tick()).toEqual({ claimed: 1, handedOff: 1 });
    h.clock.set(at(2 * MINUTE));
    expect(await h.cron.tick()).toEqual({ claimed: 0, handedOff: 0 });
    expect(h.eventsOf('cron:skipped')).toEqual([
      {
        scheduleId: schedule.id,
        scheduleName: 's',
        occurrenceId: occurrenceId(schedule.id, at(2 * MINUTE)),
        scheduledTime: at(2 * MINUTE),
        reason: 'overlap',
      },
    ]);
    expect(await h.executor.completeAll(['wf'])).toBe(1);
    h.clock.set(at(3 * MINUTE));
    expect(await h.cron.tick()).toEqual({ claimed: 1, handedOff: 1 });
    const statuses = (await h.cron.history('s')).map((row) => [row.scheduledTime, row.status]);
    expect(statuses).toEqual([
      [at(3 * MINUTE), 'handed_off'],
      [at(2 * MINUTE), 'skipped'],
      [at(MINUTE), 'handed_off'],
    ]);
  });

  it('keeps at most one occurrence of a run_all backlog per tick', async () => {
    const { h } = await setUp({ overlapPolicy: 'skip', catchupPolicy: 'run_all' });
    h.clock.set(at(10 * MINUTE + 30 * SECOND));
    expect(await h.cron.tick()).toEqual({ claimed: 1, handedOff: 1 });
    const history = await h.cron.history('s');
    expect(history.filter((row) => row.status === 'handed_off').map((row) => row.scheduledTime)).toEqual([at(MINUTE)]);
    expect(history.filter((row) => row.status === 'skipped')).toHaveLength(9);
    expect(await allPipelines(h.storage)).toHaveLength(1);
  });

  it('allows overlapping pipelines by default', async () => {
    const { h } = await setUp();
    for (let minute = 1; minute <= 3; minute += 1) {
      h.clock.set(at(minute * MINUTE));
      await h.cron.tick();
    }
    expect(await allPipelines(h.storage)).toHaveLength(3);
  });
});

describe('enable after a long disable', () => {
  it('fires nothing stale', async () => {
    const { h } = await setUp({ catchupPolicy: 'run_all' });
    await h.cron.setEnabled('s', false);
    h.clock.set(at(5 * HOUR + 10 * SECOND));
    expect(await h.cron.tick()).toEqual({ claimed: 0, handedOff: 0 });
    await h.cron.setEnabled('s', true);
    expect(await h.cron.tick()).toEqual({ claimed: 0, handedOff: 0 });
    h.clock.set(at(5 * HOUR + MINUTE));
    expect(await h.cron.tick()).toEqual({ claimed: 1, handedOff: 1 });
    expect(await h.cron.history('s')).toEqual([expect.objectContaining({ scheduledTime: at(5 * HOUR + MINUTE) })]);
  });
});

describe('active window', () => {
  it('fires only slots in [startAt, endAt), then has no nextRunAt', async () => {
    const { h } = await setUp({ startAt: at(10 * MINUTE), endAt: at(13 * MINUTE) });
    expect((await h.cron.getSchedule('s')).nextRunAt).toEqual(at(10 * MINUTE));
    h.clock.set(at(9 * MINUTE));
    expect(await h.cron.tick()).toEqual({ claimed: 0, handedOff: 0 });
    for (let minute = 10; minute <= 15; minute += 1) {
      h.clock.set(at(minute * MINUTE));
      await h.cron.tick();
    }
    const times = (await allPipelines(h.storage)).map((pipeline) => pipeline.scheduledTime);
    expect(times).toEqual([at(10 * MINUTE), at(11 * MINUTE), at(12 * MINUTE)]);
    expect((await h.cron.getSchedule('s')).nextRunAt).toBeNull();
  });

  it('does not run a catch-up slot at or after endAt', async () => {
    const { h } = await setUp({ endAt: at(5 * MINUTE), catchupPolicy: 'run_all' });
    h.clock.set(at(HOUR));
    expect(await h.cron.tick()).toEqual({ claimed: 4, handedOff: 4 });
    expect((await h.cron.getSchedule('s')).nextRunAt).toBeNull();
  });
});

describe('jitter', () => {
  it('hands off at scheduledTime + hash(occurrence id) mod jitterMs, keeping the nominal time', async () => {
    const { h, schedule } = await setUp({ jitterMs: 30_000 });
    const id = occurrenceId(schedule.id, at(MINUTE));
    const delay = Number.parseInt(id.replaceAll('-', '').slice(-12), 16) % 30_000;
    h.clock.set(at(MINUTE));
    const first = await h.cron.tick();
    expect(first.claimed).toBe(1);
    const [row] = await h.cron.history('s');
    expect(row!.fireAt).toEqual(at(MINUTE + delay));
    if (delay > 0) {
      expect(first.handedOff).toBe(0);
      expect(row!.status).toBe('claimed');
      h.clock.set(at(MINUTE + delay - 1));
      expect((await h.cron.tick()).handedOff).toBe(0);
    }
    h.clock.set(at(MINUTE + delay));
    expect((await h.cron.tick()).handedOff).toBe(delay > 0 ? 1 : 0);
    const [pipeline] = await allPipelines(h.storage);
    expect(pipeline!.scheduledTime).toEqual(at(MINUTE));
    expect(h.eventsOf('cron:fired')[0]!.lagMs).toBe(delay);
  });

  it('gives different occurrences different delays and never delays catch-up', async () => {
    const { h } = await setUp({ jitterMs: 50_000, catchupPolicy: 'run_all' });
    h.clock.set(at(20 * MINUTE));
    await h.cron.tick();
    const rows = await h.cron.history('s', { limit: 100 });
    const catchup = rows.filter((row) => row.source === 'catchup');
    expect(catchup.length).toBeGreaterThan(0);
    for (const row of catchup) expect(row.fireAt).toEqual(row.scheduledTime);
    const onTime = rows.filter((row) => row.source === 'schedule');
    const delays = new Set(onTime.map((row) => row.fireAt.getTime() - row.scheduledTime.getTime()));
    expect(delays.size).toBe(onTime.length);
  });
});

describe('jittered occurrences held in memory', () => {
  // A fixed schedule id, so that the jitter (jitterMs 50 s) is known: 24,675 ms for the slot at
  // T0+1m, 30,901 ms for the one at T0+2m.
  const ID = '5c0e4b8a-7d21-4f3e-9a6b-1c2d3e4f5a6b';
  const FIRST_DELAY = 24_675;
  const first = occurrenceId(ID, at(MINUTE));

  async function setUpJittered(options: HarnessOptions = {}): Promise<CronHarness> {
    const harness = await openHarness(options);
    h = harness;
    await harness.cron.addSchedule({
      name: 's',
      workflowName: 'wf',
      cronExpression: '* * * * *',
      overlapPolicy: 'cancel_other',
      jitterMs: 50_000,
    });
    const row = (await harness.storage.cron.getScheduleByName('s'))!;
    await harness.storage.cron.deleteSchedule(row.id);
    await harness.storage.cron.insertSchedule({ ...row, id: ID });
    return harness;
  }

  it('never hands off one that a newer cancel_other occurrence replaced on another runner', async () => {
    const h = await setUpJittered();
    const other = h.another({ runnerId: 'runner-b' });
    h.clock.set(at(MINUTE));
    expect(await h.cron.tick()).toEqual({ claimed: 1, handedOff: 0 });
    h.clock.set(at(2 * MINUTE));
    // The slot at T0+2m, jittered too, replaces the one this runner still holds.
    expect(await other.cron.tick()).toEqual({ claimed: 1, handedOff: 0 });
    expect(other.eventsOf('cron:skipped')).toEqual([
      { scheduleId: ID, scheduleName: 's', occurrenceId: first, scheduledTime: at(MINUTE), reason: 'overlap' },
    ]);
    expect(await h.cron.tick()).toEqual({ claimed: 0, handedOff: 0 });
    expect(h.executor.calls).toBe(0);
    expect(await allPipelines(h.storage)).toEqual([]);
    expect((await h.storage.cron.getOccurrence(first))!.status).toBe('skipped');
  });

  it('cancels the pipeline of one replaced while its handoff was under way', async () => {
    let other: CronHarness | undefined;
    const h = await setUpJittered({
      faults: {
        // Between executeAsync and phase 2, another runner claims the next slot.
        afterHandoff: async () => {
          h.clock.set(at(2 * MINUTE));
          await other!.cron.tick();
        },
      },
    });
    other = h.another({ runnerId: 'runner-b', faults: {} });
    h.clock.set(at(MINUTE));
    await h.cron.tick();
    h.clock.set(at(MINUTE + FIRST_DELAY));
    expect(await h.cron.tick()).toEqual({ claimed: 0, handedOff: 0 });
    const [pipeline] = await allPipelines(h.storage);
    expect(pipeline).toMatchObject({ idempotencyKey: first, status: 'cancelled' });
    expect((await h.storage.cron.getOccurrence(first))!).toMatchObject({
      status: 'skipped',
      pipelineExecutionId: null,
    });
  });

  it('leaves one whose schedule was deleted to recovery, which abandons it', async () => {
    const h = await setUpJittered();
    h.clock.set(at(MINUTE));
    await h.cron.tick();
    await h.cron.deleteSchedule('s');
    h.clock.set(at(MINUTE + FIRST_DELAY));
    expect(await h.cron.tick()).toEqual({ claimed: 0, handedOff: 0 });
    expect(h.executor.calls).toBe(0);
    h.clock.set(at(MINUTE + FIRST_DELAY + CRON_DEFAULTS.lostThresholdMs + 1));
    expect(await h.cron.recover()).toMatchObject({ recovered: 0, abandoned: 1 });
    expect(h.eventsOf('cron:abandoned')).toEqual([
      expect.objectContaining({ occurrenceId: first, reason: 'schedule was deleted' }),
    ]);
    expect(await allPipelines(h.storage)).toEqual([]);
  });
});
