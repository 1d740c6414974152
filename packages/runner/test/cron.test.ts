import { randomUUID } from 'node:crypto';
import { systemClock } from '@orreryjs/core';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  type CronFiredEvent,
  type CronSkippedEvent,
  type DefaultRunner,
  defineWorkflow,
  InvalidCronExpressionError,
  type Json,
  ManualClock,
  ScheduleConflictError,
  ScheduleNotFoundError,
  WorkflowNotFoundError,
} from '../src/index.js';
import { ADAPTERS, gate, runnersPerTest, waitFor } from './support.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** A Monday at midnight UTC: every schedule below has a slot on it. */
const T0 = new Date('2030-01-07T00:00:00.000Z');

/** What each `report` task saw, by pipeline execution id. */
const reports = new Map<string, { context: Record<string, Json>; scheduledTime: Date | undefined; attempt: number }>();
const report = defineWorkflow({
  name: 'report',
  tasks: [
    {
      id: 'write',
      run: (ctx, info) => {
        reports.set(info.executionId, {
          context: ctx.toJSON(),
          scheduledTime: info.scheduledTime,
          attempt: info.attempt,
        });
        ctx.set('written', true);
      },
    },
  ],
});

/** The `slow` task of the first pipeline to reach it blocks until the test opens the gate. */
let slowGate = gate();
const slowStarted = new Set<string>();
const slow = defineWorkflow({
  name: 'slow',
  tasks: [
    {
      id: 'hold',
      run: async (ctx, info) => {
        slowStarted.add(info.executionId);
        await slowGate.promise;
        ctx.set('held', true);
      },
    },
  ],
});

const quick = defineWorkflow({ name: 'quick', tasks: [{ id: 'only', run: (ctx) => void ctx.set('done', true) }] });

describe.each(ADAPTERS)('the runner cron API on $name', (adapter) => {
  let clock: ManualClock;
  /** Runners on this test's database and manual clock; the slow task's gate opens before they shut down. */
  const perTest = runnersPerTest(
    adapter,
    () => ({
      workflows: [report, slow, quick],
      clock,
      pollIntervalMs: 20,
      cronPollIntervalMs: 20,
      // The clock jumps minutes at a time while tasks run: keep their leases far longer than that.
      taskLeaseMs: 6 * HOUR,
    }),
    { shutdownTimeoutMs: 1_000, beforeShutdown: () => slowGate.open() },
  );
  const { open } = perTest;

  /** Collects a runner's `cron:fired` payloads. */
  const firedEvents = (runner: DefaultRunner) => {
    const seen: CronFiredEvent[] = [];
    runner.on('cron:fired', (event) => seen.push(event));
    return seen;
  };

  /** Collects a runner's `cron:skipped` payloads. */
  const skippedEvents = (runner: DefaultRunner) => {
    const seen: CronSkippedEvent[] = [];
    runner.on('cron:skipped', (event) => seen.push(event));
    return seen;
  };

  const completed = async (runner: DefaultRunner, executionId: string) => {
    await waitFor(async () => (await runner.getExecutionStatus(executionId)) === 'completed');
    return runner.getExecutionResult(executionId);
  };

  beforeEach(() => {
    clock = new ManualClock(T0);
    slowGate = gate();
  });

  it('fires a due schedule and runs its pipeline with the schedule keys and scheduledTime', async () => {
    const runner = await open();
    const fired = firedEvents(runner);
    const schedule = await runner.addCronSchedule({
      name: 'hourly-report',
      workflowName: 'report',
      cronExpression: '0 * * * *',
      timezone: 'America/New_York',
      context: { team: 'ops', schedule_name: 'overridden by the schedule key' },
    });
    expect(schedule).toMatchObject({
      enabled: true,
      timezone: 'America/New_York',
      nextRunAt: new Date(T0.getTime() + HOUR),
    });
    await runner.start();

    // 1.5 s late: the lag is exact because the clock stands still.
    clock.set(new Date(T0.getTime() + HOUR + 1_500));
    await waitFor(() => fired.length === 1);
    const event = fired[0]!;
    expect(event).toMatchObject({
      scheduleId: schedule.id,
      scheduleName: 'hourly-report',
      scheduledTime: new Date(T0.getTime() + HOUR),
      source: 'schedule',
      lagMs: 1_500,
    });

    const result = await completed(runner, event.pipelineExecutionId);
    const slot = new Date(T0.getTime() + HOUR);
    const scheduleKeys = {
      scheduled_time: slot.toISOString(),
      schedule_id: schedule.id,
      schedule_name: 'hourly-report',
      schedule_timezone: 'America/New_York',
      cron_expression: schedule.cronExpression,
    };
    expect(result.finalContext).toEqual({ team: 'ops', ...scheduleKeys, written: true });
    expect(reports.get(event.pipelineExecutionId)).toEqual({
      context: { team: 'ops', ...scheduleKeys },
      scheduledTime: slot,
      attempt: 1,
    });

    const history = await runner.getCronExecutionHistory('hourly-report');
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({
      id: event.occurrenceId,
      scheduleId: schedule.id,
      scheduledTime: slot,
      status: 'handed_off',
      source: 'schedule',
      pipelineExecutionId: event.pipelineExecutionId,
      handedOffAt: clock.now(),
      recoveryAttempts: 0,
      recovered: false,
    });
    expect(await runner.getCronSchedule(schedule.id)).toMatchObject({
      lastRunAt: slot,
      nextRunAt: new Date(T0.getTime() + 2 * HOUR),
    });
    expect(await runner.getCronExecutionStats()).toMatchObject({
      totalExecutions: 1,
      successfulExecutions: 1,
      lostExecutions: 0,
      successRate: 100,
      meanDelayMs: 1_500,
    });
    expect(await runner.getRecoveryStats()).toEqual({
      totalRecoveryAttempts: 0,
      successfulRecoveries: 0,
      failedRecoveries: 0,
      abandonedRecoveries: 0,
      recoverySuccessRate: null,
    });
  });

  it('fires a 6-field schedule every second as the clock moves', async () => {
    const runner = await open();
    const fired = firedEvents(runner);
    await runner.addCronSchedule({ name: 'every-second', workflowName: 'report', cronExpression: '* * * * * *' });
    await runner.start();
    for (let second = 1; second <= 3; second += 1) {
      clock.set(new Date(T0.getTime() + second * 1_000));
      await waitFor(() => fired.length === second);
    }
    expect(fired.map((e) => [e.scheduledTime.toISOString(), e.lagMs])).toEqual([
      ['2030-01-07T00:00:01.000Z', 0],
      ['2030-01-07T00:00:02.000Z', 0],
      ['2030-01-07T00:00:03.000Z', 0],
    ]);
    for (const event of fired) await completed(runner, event.pipelineExecutionId);
  });

  it('fires a schedule another process wrote at its first slot, not at the next regular tick a minute later', async () => {
    // Real time: the worker's regular tick comes once a minute, and it did not write the schedule,
    // so only its claim probe's look-ahead (up to the next regular tick) can land a tick on the slot.
    const worker = await open({ clock: systemClock, cronPollIntervalMs: MINUTE });
    const writer = await open({ clock: systemClock, enableCronScheduling: false });
    const startAt = new Date(Date.now() + 1_500);
    await writer.addCronSchedule({ name: 'elsewhere', workflowName: 'report', cronExpression: '* * * * * *', startAt });
    const fired = firedEvents(worker);
    await worker.start();
    // Its first slot is the whole second at or after startAt; without the look-ahead it would fire
    // (late) after the minute waitFor does not wait.
    await waitFor(() => fired.length > 0, 20_000);
    expect(fired[0]!.scheduledTime.getTime()).toBe(Math.ceil(startAt.getTime() / 1_000) * 1_000);
    await completed(worker, fired[0]!.pipelineExecutionId);
  });

  it('returns the existing schedule when re-added unchanged at start-up, and never overwrites enabled', async () => {
    const input = {
      name: 'nightly',
      workflowName: 'report',
      cronExpression: '0 0 * * *',
      context: { b: 2, a: { y: 1, x: 2 } },
    };
    const first = await open();
    const added = await first.addCronSchedule(input);
    await first.setCronScheduleEnabled('nightly', false);
    await first.shutdown();

    clock.advance(HOUR);
    const second = await open();
    // '@daily' normalises to the same expression; key order of the context does not matter.
    const again = await second.addCronSchedule({
      ...input,
      cronExpression: '@daily',
      context: { a: { x: 2, y: 1 }, b: 2 },
      enabled: true,
    });
    expect(again).toMatchObject({ id: added.id, createdAt: added.createdAt, enabled: false });
    expect(await second.listCronSchedules()).toHaveLength(1);
  });

  it('raises ScheduleConflictError for another definition under the same name, and updates with onConflict update', async () => {
    const runner = await open();
    const added = await runner.addCronSchedule({ name: 'sync', workflowName: 'report', cronExpression: '0 * * * *' });
    const changed = { name: 'sync', workflowName: 'report', cronExpression: '*/15 * * * *', context: { v: 2 } };

    await expect(runner.addCronSchedule(changed)).rejects.toBeInstanceOf(ScheduleConflictError);
    await expect(runner.addCronSchedule(changed, { onConflict: 'error' })).rejects.toThrow(/sync/);
    expect(await runner.getCronSchedule('sync')).toMatchObject({
      cronExpression: added.cronExpression,
      context: {},
      nextRunAt: added.nextRunAt,
    });

    clock.advance(MINUTE);
    const updated = await runner.addCronSchedule(changed, { onConflict: 'update' });
    expect(updated).toMatchObject({ id: added.id, context: { v: 2 }, nextRunAt: new Date(T0.getTime() + 15 * MINUTE) });
    expect(updated.cronExpression).not.toBe(added.cronExpression);
    expect(await runner.listCronSchedules()).toHaveLength(1);
    // The new definition is now the one that re-adding returns unchanged.
    expect((await runner.addCronSchedule(changed)).id).toBe(added.id);
  });

  it('refuses a schedule of an unregistered workflow or a bad expression and writes nothing', async () => {
    const runner = await open();
    await expect(
      runner.addCronSchedule({ name: 'ghost', workflowName: 'not-registered', cronExpression: '* * * * *' }),
    ).rejects.toBeInstanceOf(WorkflowNotFoundError);
    await expect(
      runner.addCronSchedule({ name: 'bad', workflowName: 'report', cronExpression: '61 * * * *' }),
    ).rejects.toBeInstanceOf(InvalidCronExpressionError);
    expect(await runner.listCronSchedules()).toEqual([]);
    await expect(runner.getCronSchedule('ghost')).rejects.toBeInstanceOf(ScheduleNotFoundError);

    const storage = await perTest.db.storage();
    try {
      expect(await storage.cron.listSchedules({ limit: 10, offset: 0 })).toEqual([]);
    } finally {
      await storage.close();
    }
  });

  it('refuses to rename a schedule to a taken name, and fires one whose workflow only another runner registered', async () => {
    const runner = await open();
    await runner.addCronSchedule({ name: 'taken', workflowName: 'report', cronExpression: '0 * * * *' });
    const other = await runner.addCronSchedule({ name: 'other', workflowName: 'report', cronExpression: '0 * * * *' });
    await expect(runner.updateCronSchedule('other', { name: 'taken' })).rejects.toBeInstanceOf(ScheduleConflictError);
    expect(await runner.updateCronSchedule(other.id, { name: 'renamed' })).toMatchObject({
      id: other.id,
      name: 'renamed',
    });
    await expect(runner.getCronSchedule('other')).rejects.toBeInstanceOf(ScheduleNotFoundError);

    // The workflows table holds "report" (stored by `runner`): a runner without its code can still fire it.
    const stranger = await open({ workflows: [quick] });
    const fired = await stranger.triggerCronSchedule('taken');
    expect(fired.workflowName).toBe('report');
    expect(await runner.getCronExecutionHistory('taken')).toMatchObject([{ pipelineExecutionId: fired.id }]);
    expect((await runner.listExecutions()).map((e) => [e.executionId, e.workflowName])).toEqual([[fired.id, 'report']]);
  });

  it('raises ScheduleNotFoundError for an unknown id or name on every schedule call', async () => {
    const runner = await open();
    await runner.addCronSchedule({ name: 'known', workflowName: 'report', cronExpression: '0 * * * *' });
    const past = { start: new Date(T0.getTime() - DAY), end: T0 };
    for (const unknown of ['unknown', randomUUID(), randomUUID().toUpperCase()]) {
      const calls: Array<[string, () => Promise<unknown>]> = [
        ['get', () => runner.getCronSchedule(unknown)],
        ['update', () => runner.updateCronSchedule(unknown, { cronExpression: '*/5 * * * *' })],
        ['enable', () => runner.setCronScheduleEnabled(unknown, true)],
        ['disable', () => runner.setCronScheduleEnabled(unknown, false)],
        ['delete', () => runner.deleteCronSchedule(unknown)],
        ['trigger', () => runner.triggerCronSchedule(unknown)],
        ['backfill', () => runner.backfillCronSchedule(unknown, past)],
        ['history', () => runner.getCronExecutionHistory(unknown)],
      ];
      for (const [label, call] of calls) {
        await expect(call(), `${label}(${unknown})`).rejects.toBeInstanceOf(ScheduleNotFoundError);
      }
    }
    // The failed calls wrote nothing and left the known schedule alone.
    expect(await runner.listCronSchedules()).toMatchObject([{ name: 'known', enabled: true }]);
    expect(await runner.listExecutions()).toEqual([]);
  });

  it('manages schedules before start() and on a runner with enableCronScheduling false', async () => {
    const idle = await open();
    const added = await idle.addCronSchedule({ name: 'early', workflowName: 'quick', cronExpression: '*/5 * * * *' });
    expect((await idle.listCronSchedules()).map((s) => s.id)).toEqual([added.id]);
    expect(await idle.getCronSchedule(added.id.toUpperCase())).toMatchObject({ name: 'early' });
    expect(await idle.updateCronSchedule('early', { context: { stage: 1 } })).toMatchObject({ context: { stage: 1 } });
    expect(await idle.setCronScheduleEnabled('early', false)).toMatchObject({ enabled: false, nextRunAt: null });
    // A trigger before start() writes its pipeline; a started runner runs it.
    const triggered = await idle.triggerCronSchedule('early');
    expect(await triggered.status()).toBe('pending');

    const admin = await open({ enableCronScheduling: false });
    await admin.start();
    expect(await admin.setCronScheduleEnabled('early', true)).toMatchObject({
      enabled: true,
      nextRunAt: new Date(T0.getTime() + 5 * MINUTE),
    });
    expect((await triggered.wait({ timeoutMs: 20_000 })).status).toBe('completed');

    // Past its slot, a runner that does not schedule fires nothing; it still runs pipelines.
    clock.set(new Date(T0.getTime() + 6 * MINUTE));
    for (let i = 0; i < 5; i += 1) expect((await admin.execute('quick')).status).toBe('completed');
    expect((await admin.getCronExecutionHistory('early')).map((r) => r.source)).toEqual(['manual']);

    await admin.deleteCronSchedule('early');
    expect(await admin.listCronSchedules()).toEqual([]);
    await expect(idle.getCronSchedule('early')).rejects.toBeInstanceOf(ScheduleNotFoundError);
    // Deleting keeps the ledger, readable by the schedule's id.
    expect(await idle.getCronExecutionHistory(added.id)).toMatchObject([{ source: 'manual', status: 'handed_off' }]);
  });

  it('triggers a disabled schedule now, audited as a manual occurrence', async () => {
    const runner = await open();
    const fired = firedEvents(runner);
    await runner.start();
    const schedule = await runner.addCronSchedule({
      name: 'on-demand',
      workflowName: 'report',
      cronExpression: '0 0 1 1 *',
      enabled: false,
    });
    clock.advance(42_000);
    const now = clock.now();
    const first = await runner.triggerCronSchedule('on-demand');
    const second = await runner.triggerCronSchedule(schedule.id);
    expect(first.id).not.toBe(second.id);

    const result = await first.wait({ timeoutMs: 20_000 });
    expect(result.status).toBe('completed');
    expect(result.finalContext).toMatchObject({ schedule_id: schedule.id, scheduled_time: now.toISOString() });
    expect(reports.get(first.id)?.scheduledTime).toEqual(now);
    expect((await second.wait({ timeoutMs: 20_000 })).status).toBe('completed');

    const history = await runner.getCronExecutionHistory('on-demand');
    expect(history).toHaveLength(2);
    expect(new Set(history.map((r) => r.pipelineExecutionId))).toEqual(new Set([first.id, second.id]));
    for (const row of history)
      expect(row).toMatchObject({ source: 'manual', status: 'handed_off', scheduledTime: now });
    expect(fired.map((e) => [e.source, e.lagMs])).toEqual([
      ['manual', 0],
      ['manual', 0],
    ]);
    expect(await runner.getCronSchedule('on-demand')).toMatchObject({ enabled: false, nextRunAt: null });
  });

  it('backfills the slots of a past range once, and creates nothing the second time', async () => {
    const runner = await open({ enableCronScheduling: false });
    await runner.start();
    const schedule = await runner.addCronSchedule({
      name: 'hourly',
      workflowName: 'report',
      cronExpression: '0 * * * *',
      overlapPolicy: 'skip',
    });
    clock.set(new Date(T0.getTime() + 5 * HOUR));
    const range = { start: T0, end: new Date(T0.getTime() + 3 * HOUR) };

    expect(await runner.backfillCronSchedule('hourly', range)).toEqual({ created: 3, existing: 0 });
    expect(await runner.backfillCronSchedule(schedule.id, range)).toEqual({ created: 0, existing: 3 });
    // A wider range adds only its new slots.
    const wider = { start: T0, end: new Date(T0.getTime() + 4 * HOUR) };
    expect(await runner.backfillCronSchedule('hourly', wider)).toEqual({ created: 1, existing: 3 });

    const history = await runner.getCronExecutionHistory('hourly');
    expect(history.map((r) => [r.scheduledTime.toISOString(), r.source, r.status])).toEqual([
      ['2030-01-07T03:00:00.000Z', 'backfill', 'handed_off'],
      ['2030-01-07T02:00:00.000Z', 'backfill', 'handed_off'],
      ['2030-01-07T01:00:00.000Z', 'backfill', 'handed_off'],
      ['2030-01-07T00:00:00.000Z', 'backfill', 'handed_off'],
    ]);
    for (const row of history) {
      const result = await completed(runner, row.pipelineExecutionId!);
      expect(result.finalContext.scheduled_time).toBe(row.scheduledTime.toISOString());
      expect(reports.get(row.pipelineExecutionId!)?.scheduledTime).toEqual(row.scheduledTime);
    }
    expect((await runner.listExecutions({ workflowName: 'report' })).length).toBe(4);
  });

  it('fires nothing stale when a schedule is re-enabled after a long pause', async () => {
    const runner = await open();
    const fired = firedEvents(runner);
    const schedule = await runner.addCronSchedule({
      name: 'minutely',
      workflowName: 'report',
      cronExpression: '* * * * *',
      catchupPolicy: 'run_all',
    });
    await runner.start();
    clock.set(new Date(T0.getTime() + MINUTE));
    await waitFor(() => fired.length === 1);
    await completed(runner, fired[0]!.pipelineExecutionId);

    expect(await runner.setCronScheduleEnabled('minutely', false)).toMatchObject({ enabled: false, nextRunAt: null });
    clock.set(new Date(T0.getTime() + DAY + 30_000));
    // The disabled schedule is not due; a round trip through the task loop lets ticks pass.
    expect((await runner.execute('quick')).status).toBe('completed');
    const enabled = await runner.setCronScheduleEnabled(schedule.id, true);
    expect(enabled.nextRunAt).toEqual(new Date(T0.getTime() + DAY + MINUTE));

    clock.set(enabled.nextRunAt!);
    await waitFor(() => fired.length === 2);
    await completed(runner, fired[1]!.pipelineExecutionId);
    const history = await runner.getCronExecutionHistory('minutely');
    expect(history.map((r) => [r.scheduledTime.toISOString(), r.source, r.status])).toEqual([
      ['2030-01-08T00:01:00.000Z', 'schedule', 'handed_off'],
      ['2030-01-07T00:01:00.000Z', 'schedule', 'handed_off'],
    ]);
    expect(fired.map((e) => e.lagMs)).toEqual([0, 0]);
  });

  it('skips an occurrence while the previous pipeline still runs under overlapPolicy skip', async () => {
    const runner = await open();
    const fired = firedEvents(runner);
    const skipped = skippedEvents(runner);
    const schedule = await runner.addCronSchedule({
      name: 'exclusive',
      workflowName: 'slow',
      cronExpression: '* * * * *',
      overlapPolicy: 'skip',
    });
    await runner.start();

    clock.set(new Date(T0.getTime() + MINUTE));
    await waitFor(() => fired.length === 1);
    const firstId = fired[0]!.pipelineExecutionId;
    await waitFor(() => slowStarted.has(firstId));

    clock.set(new Date(T0.getTime() + 2 * MINUTE));
    await waitFor(() => skipped.length === 1);
    expect(skipped[0]).toMatchObject({
      scheduleId: schedule.id,
      scheduleName: 'exclusive',
      scheduledTime: new Date(T0.getTime() + 2 * MINUTE),
      reason: 'overlap',
    });
    expect(await runner.getExecutionStatus(firstId)).toBe('running');

    slowGate.open();
    await completed(runner, firstId);
    clock.set(new Date(T0.getTime() + 3 * MINUTE));
    await waitFor(() => fired.length === 2);
    await completed(runner, fired[1]!.pipelineExecutionId);

    const history = await runner.getCronExecutionHistory('exclusive');
    expect(history.map((r) => [r.scheduledTime.toISOString(), r.status, r.pipelineExecutionId !== null])).toEqual([
      ['2030-01-07T00:03:00.000Z', 'handed_off', true],
      ['2030-01-07T00:02:00.000Z', 'skipped', false],
      ['2030-01-07T00:01:00.000Z', 'handed_off', true],
    ]);
    expect(await runner.listExecutions({ workflowName: 'slow' })).toHaveLength(2);
    expect(await runner.getCronExecutionStats()).toMatchObject({ successfulExecutions: 2, skippedExecutions: 1 });
  });

  it('stops the cron tick at shutdown, leaving later slots to the next runner', async () => {
    const first = await open({ runnerId: 'cron-first' });
    const firstFired = firedEvents(first);
    const schedule = await first.addCronSchedule({
      name: 'ticking',
      workflowName: 'report',
      cronExpression: '* * * * *',
    });
    await first.start();
    clock.set(new Date(T0.getTime() + MINUTE));
    await waitFor(() => firstFired.length === 1);
    await completed(first, firstFired[0]!.pipelineExecutionId);

    await first.shutdown();
    // The cron methods throw synchronously after shutdown (they are not async functions): await either way.
    await expect((async () => first.getCronSchedule('ticking'))()).rejects.toBeInstanceOf(ConfigurationError);
    clock.set(new Date(T0.getTime() + 2 * MINUTE));

    const second = await open({ runnerId: 'cron-second' });
    const secondFired = firedEvents(second);
    await second.start();
    await waitFor(() => secondFired.length === 1);
    await completed(second, secondFired[0]!.pipelineExecutionId);
    expect(firstFired).toHaveLength(1);

    const storage = await perTest.db.storage();
    try {
      const rows = await storage.cron.listOccurrences(schedule.id, 10, 0);
      expect(rows.map((r) => [r.scheduledTime.toISOString(), r.claimedBy, r.status])).toEqual([
        ['2030-01-07T00:02:00.000Z', 'cron-second', 'handed_off'],
        ['2030-01-07T00:01:00.000Z', 'cron-first', 'handed_off'],
      ]);
    } finally {
      await storage.close();
    }
  });
});
