import type { ScheduleRow } from '@orreryjs/core';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  type CronScheduleInput,
  defineWorkflow,
  InvalidCronExpressionError,
  ManualClock,
  ScheduleConflictError,
  ValidationError,
  WorkflowNotFoundError,
} from '../src/index.js';
import { ADAPTERS, runnersPerTest } from './support.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** A Monday at midnight UTC. */
const T0 = new Date('2030-01-07T00:00:00.000Z');

const noop = (name: string) => defineWorkflow({ name, tasks: [{ id: 'only', run: (ctx) => void ctx.set('done', 1) }] });

describe.each(ADAPTERS)('syncCronSchedules on $name', (adapter) => {
  let clock: ManualClock;
  const perTest = runnersPerTest(adapter, () => ({
    workflows: [noop('report'), noop('billing')],
    clock,
    enableCronScheduling: false,
  }));
  const { open } = perTest;

  /** Every stored schedule row (with `version`), by name. */
  const rows = async (): Promise<Record<string, ScheduleRow>> => {
    const storage = await perTest.db.storage();
    try {
      const all = await storage.cron.listSchedules({ limit: 1_000, offset: 0 });
      return Object.fromEntries(all.map((row) => [row.name, row]));
    } finally {
      await storage.close();
    }
  };

  beforeEach(() => {
    clock = new ManualClock(T0);
  });

  it('reports and applies exactly its plan: creates, updates the fields that differ, leaves the rest', async () => {
    const runner = await open();
    await runner.addCronSchedule({ name: 'same', workflowName: 'report', cronExpression: '0 * * * *' });
    await runner.addCronSchedule({ name: 'moved', workflowName: 'report', cronExpression: '0 * * * *' });
    const before = await rows();
    clock.advance(10 * MINUTE);

    const plan = await runner.syncCronSchedules([
      // The same definition, written another way.
      { name: 'same', workflowName: 'report', cronExpression: '@hourly', timezone: 'Etc/UTC' },
      { name: 'moved', workflowName: 'report', cronExpression: '*/15 * * * *', context: { team: 'ops' } },
      { name: 'fresh', workflowName: 'billing', cronExpression: '0 0 L * ?' },
    ]);

    expect(plan).toEqual({
      created: ['fresh'],
      updated: [{ name: 'moved', changed: ['cronExpression', 'context'] }],
      unchanged: ['same'],
      pruned: [],
    });
    const after = await rows();
    expect(Object.keys(after).sort()).toEqual(['fresh', 'moved', 'same']);
    expect(after.same).toEqual(before.same);
    // Re-timed from now as updateCronSchedule does: the first quarter hour after 00:10.
    expect(after.moved).toMatchObject({
      id: before.moved!.id,
      context: { team: 'ops' },
      nextRunAt: new Date(T0.getTime() + 15 * MINUTE),
      version: before.moved!.version + 1,
    });
    expect(after.moved!.cronExpression).not.toBe(before.moved!.cronExpression);
    expect(after.fresh).toMatchObject({
      workflowName: 'billing',
      enabled: true,
      nextRunAt: new Date('2030-01-31T00:00:00.000Z'),
    });
  });

  it('finds nothing to do on a second identical sync, and writes nothing', async () => {
    const runner = await open();
    const list: CronScheduleInput[] = [
      { name: 'a', workflowName: 'report', cronExpression: '*/5 * * * *', context: { x: 1, y: [2] } },
      { name: 'b', workflowName: 'billing', cronExpression: '@every 1h30m', startAt: new Date(T0.getTime() + HOUR) },
      { name: 'c', workflowName: 'billing', cronExpression: '0 0 18 24 12 * 2031', timezone: 'Europe/Paris' },
    ];
    await runner.syncCronSchedules(list, { prune: 'delete' });
    const first = await rows();
    clock.advance(MINUTE);

    const again = await runner.syncCronSchedules(list, { prune: 'delete' });

    expect(again).toEqual({ created: [], updated: [], unchanged: ['a', 'b', 'c'], pruned: [] });
    expect(await rows()).toEqual(first);
  });

  it('computes the plan on dryRun and writes nothing', async () => {
    const runner = await open();
    await runner.addCronSchedule({ name: 'kept', workflowName: 'report', cronExpression: '0 * * * *' });
    await runner.addCronSchedule({ name: 'dropped', workflowName: 'report', cronExpression: '0 * * * *' });
    const before = await rows();

    const plan = await runner.syncCronSchedules(
      [
        { name: 'kept', workflowName: 'report', cronExpression: '30 * * * *' },
        { name: 'new', workflowName: 'report', cronExpression: '0 * * * *' },
      ],
      { prune: 'delete', dryRun: true },
    );

    expect(plan).toEqual({
      created: ['new'],
      updated: [{ name: 'kept', changed: ['cronExpression'] }],
      unchanged: [],
      pruned: ['dropped'],
    });
    expect(await rows()).toEqual(before);
  });

  const good: CronScheduleInput[] = [
    { name: 'new', workflowName: 'report', cronExpression: '0 * * * *' },
    { name: 'existing', workflowName: 'report', cronExpression: '*/10 * * * *' },
  ];
  it.each([
    [
      'an unknown key',
      { name: 'bad', workflowName: 'report', cronExpression: '0 * * * *', tz: 'UTC' },
      ValidationError,
      /schedules\[2\].*"tz".*timezone/,
    ],
    [
      'a bad expression',
      { name: 'bad', workflowName: 'report', cronExpression: '0 0 H * *' },
      InvalidCronExpressionError,
      /schedules\[2\]/,
    ],
    [
      'an unregistered workflow',
      { name: 'bad', workflowName: 'nowhere', cronExpression: '0 * * * *' },
      WorkflowNotFoundError,
      /nowhere/,
    ],
    [
      'a duplicate name',
      { name: 'new', workflowName: 'report', cronExpression: '5 * * * *' },
      ValidationError,
      /schedules\[2\].*"new" is listed twice/,
    ],
    [
      'a one-off already past',
      { name: 'bad', workflowName: 'report', cronExpression: '0 0 1 1 * 2029' },
      ValidationError,
      /schedules\[2\].*2029/,
    ],
  ] as const)('refuses the whole list for %s anywhere in it, writing nothing', async (_label, bad, type, message) => {
    const runner = await open();
    await runner.addCronSchedule({ name: 'existing', workflowName: 'report', cronExpression: '0 * * * *' });
    await runner.addCronSchedule({ name: 'other', workflowName: 'report', cronExpression: '0 * * * *' });
    const before = await rows();

    const failure = await runner
      .syncCronSchedules([...good, bad as CronScheduleInput], { prune: 'delete' })
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(type);
    expect((failure as Error).message).toMatch(message);
    expect(await rows()).toEqual(before);
  });

  it('refuses bad options and entries outside the scope, writing nothing', async () => {
    const runner = await open();
    await runner.addCronSchedule({ name: 'other', workflowName: 'report', cronExpression: '0 * * * *' });
    const before = await rows();
    const list = [{ name: 'billing.a', workflowName: 'billing', cronExpression: '0 * * * *' }];

    await expect(runner.syncCronSchedules(list, { prune: 'drop' as 'delete' })).rejects.toThrow(ValidationError);
    await expect(runner.syncCronSchedules(list, { dryrun: true } as object)).rejects.toThrow(/did you mean "dryRun"/);
    await expect(runner.syncCronSchedules(list, { scope: { prefix: 'x' } as object })).rejects.toThrow(/namePrefix/);
    await expect(runner.syncCronSchedules(list, { prune: 'delete', scope: { namePrefix: 'ops.' } })).rejects.toThrow(
      /schedules\[0\].*outside the sync's scope/,
    );
    await expect(runner.syncCronSchedules({} as CronScheduleInput[])).rejects.toThrow(/array/);
    expect(await rows()).toEqual(before);
  });

  it('prunes only the schedules in scope: pause disables with a note, delete deletes and keeps the ledger', async () => {
    const runner = await open();
    for (const name of ['billing.a', 'billing.b', 'billing.c', 'ops.c']) {
      await runner.addCronSchedule({
        name,
        workflowName: name === 'billing.c' ? 'report' : 'billing',
        cronExpression: '0 * * * *',
      });
    }
    const list = [{ name: 'billing.a', workflowName: 'billing', cronExpression: '0 * * * *' }];
    const scope = { namePrefix: 'billing.', workflowName: 'billing' };

    expect(await runner.syncCronSchedules(list, { prune: 'pause', scope })).toEqual({
      created: [],
      updated: [],
      unchanged: ['billing.a'],
      pruned: ['billing.b'],
    });
    const paused = await rows();
    expect(paused['billing.b']).toMatchObject({
      enabled: false,
      note: 'removed from the synced list',
      nextRunAt: null,
    });
    for (const name of ['billing.a', 'billing.c', 'ops.c'])
      expect(paused[name]).toMatchObject({ enabled: true, version: 1 });

    // Already paused: nothing more to prune, nothing written.
    expect((await runner.syncCronSchedules(list, { prune: 'pause', scope })).pruned).toEqual([]);
    expect(await rows()).toEqual(paused);

    const pruned = await runner.getCronSchedule('billing.b');
    await runner.triggerCronSchedule('billing.b');
    expect(await runner.syncCronSchedules(list, { prune: 'delete', scope })).toMatchObject({ pruned: ['billing.b'] });
    expect(Object.keys(await rows()).sort()).toEqual(['billing.a', 'billing.c', 'ops.c']);
    expect(await runner.getCronExecutionHistory(pruned.id)).toHaveLength(1);
  });

  it('plans again after losing a race: of two concurrent identical syncs one creates, the other finds it unchanged', async () => {
    const runner = await open();
    const other = await open();
    const list = [
      { name: 'raced', workflowName: 'report', cronExpression: '0 * * * *' },
      { name: 'raced-too', workflowName: 'billing', cronExpression: '@every 10m' },
    ];

    const plans = await Promise.all([runner.syncCronSchedules(list), other.syncCronSchedules(list)]);

    // Both read before either wrote: the second's inserts lose, it re-reads and finds the first's rows.
    expect(plans.map((plan) => plan.created.length + plan.unchanged.length)).toEqual([2, 2]);
    expect(plans.flatMap((plan) => plan.created).sort()).toEqual(['raced', 'raced-too']);
    expect(plans.flatMap((plan) => plan.unchanged).sort()).toEqual(['raced', 'raced-too']);
    expect(Object.values(await rows()).map((row) => row.version)).toEqual([1, 1]);
  });

  it('never overwrites enabled, either way', async () => {
    const runner = await open();
    await runner.addCronSchedule({ name: 'off', workflowName: 'report', cronExpression: '0 * * * *', enabled: false });
    await runner.addCronSchedule({ name: 'on', workflowName: 'report', cronExpression: '0 * * * *' });

    const plan = await runner.syncCronSchedules([
      { name: 'off', workflowName: 'report', cronExpression: '30 * * * *', enabled: true },
      { name: 'on', workflowName: 'report', cronExpression: '0 * * * *', enabled: false },
      { name: 'new-off', workflowName: 'report', cronExpression: '0 * * * *', enabled: false },
    ]);

    expect(plan).toMatchObject({ created: ['new-off'], updated: [{ name: 'off', changed: ['cronExpression'] }] });
    const after = await rows();
    expect(after.off).toMatchObject({ enabled: false, nextRunAt: null });
    expect(after.on).toMatchObject({ enabled: true, version: 1 });
    // A new schedule takes `enabled` from its entry.
    expect(after['new-off']).toMatchObject({ enabled: false, nextRunAt: null });
  });

  it('names the fields that differ in ScheduleConflictError from addCronSchedule', async () => {
    const runner = await open();
    await runner.addCronSchedule({ name: 'nightly', workflowName: 'report', cronExpression: '0 0 * * *' });

    const failure = await runner
      .addCronSchedule({ name: 'nightly', workflowName: 'billing', cronExpression: '@daily', jitterMs: 500 })
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(ScheduleConflictError);
    expect((failure as ScheduleConflictError).fields).toEqual(['workflowName', 'jitterMs']);
    expect((failure as Error).message).toContain('differs in workflowName, jitterMs');
  });
});
