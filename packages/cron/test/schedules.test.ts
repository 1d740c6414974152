import {
  ContextError,
  InvalidCronExpressionError,
  InvalidTimezoneError,
  ScheduleConflictError,
  ScheduleNotFoundError,
  ValidationError,
  WorkflowNotFoundError,
} from '@orreryjs/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CRON_DEFAULTS } from '../src/index.js';
import { occurrenceContext, recoveryContext } from '../src/schedule-context.js';
import { type CronHarness, HOUR, MINUTE, openHarness, T0 } from './support/cron-harness.js';

let h: CronHarness;
beforeEach(async () => {
  h = await openHarness({ workflows: ['wf', 'other'] });
});
afterEach(() => h.close());

const at = (ms: number) => new Date(T0.getTime() + ms);

describe('addSchedule', () => {
  it('stores the normalised definition with defaults and the first slot after now as nextRunAt', async () => {
    h.clock.advance(30_000);
    const schedule = await h.cron.addSchedule({ name: 'daily', workflowName: 'wf', cronExpression: '@daily' });
    expect(schedule).toMatchObject({
      name: 'daily',
      workflowName: 'wf',
      cronExpression: '0 0 0 * * *',
      timezone: 'UTC',
      enabled: true,
      context: {},
      catchupPolicy: 'run_once',
      overlapPolicy: 'allow',
      jitterMs: 0,
      startAt: null,
      endAt: null,
      lastRunAt: null,
      nextRunAt: at(24 * HOUR),
    });
    expect(schedule.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('returns the existing schedule when re-added with an equivalent definition', async () => {
    const first = await h.cron.addSchedule({
      name: 'n',
      workflowName: 'wf',
      cronExpression: '@daily',
      context: { a: 1, b: 2 },
    });
    const again = await h.cron.addSchedule({
      name: 'n',
      workflowName: 'wf',
      cronExpression: '0 0 * * *',
      timezone: 'utc',
      context: { b: 2, a: 1 },
    });
    expect(again.id).toBe(first.id);
    expect(await h.cron.listSchedules()).toHaveLength(1);
  });

  it('never overwrites enabled when re-added', async () => {
    const first = await h.cron.addSchedule({ name: 'n', workflowName: 'wf', cronExpression: '* * * * *' });
    await h.cron.setEnabled('n', false);
    const again = await h.cron.addSchedule({
      name: 'n',
      workflowName: 'wf',
      cronExpression: '* * * * *',
      enabled: true,
    });
    expect(again).toMatchObject({ id: first.id, enabled: false });
    const updated = await h.cron.addSchedule(
      { name: 'n', workflowName: 'wf', cronExpression: '*/5 * * * *', enabled: true },
      { onConflict: 'update' },
    );
    expect(updated).toMatchObject({ id: first.id, enabled: false, cronExpression: '0 */5 * * * *' });
  });

  it('raises ScheduleConflictError for another definition under the same name and changes nothing', async () => {
    const first = await h.cron.addSchedule({ name: 'n', workflowName: 'wf', cronExpression: '* * * * *' });
    await expect(h.cron.addSchedule({ name: 'n', workflowName: 'wf', cronExpression: '*/2 * * * *' })).rejects.toThrow(
      ScheduleConflictError,
    );
    await expect(
      h.cron.addSchedule({ name: 'n', workflowName: 'wf', cronExpression: '* * * * *', catchupPolicy: 'skip' }),
    ).rejects.toThrow(/onConflict: 'update'/);
    expect(await h.cron.getSchedule('n')).toEqual(first);
  });

  it("rewrites the definition with onConflict: 'update' and re-times nextRunAt", async () => {
    const first = await h.cron.addSchedule({ name: 'n', workflowName: 'wf', cronExpression: '0 * * * *' });
    expect(first.nextRunAt).toEqual(at(HOUR));
    h.clock.advance(10 * MINUTE);
    const updated = await h.cron.addSchedule(
      { name: 'n', workflowName: 'other', cronExpression: '*/15 * * * *', context: { k: 'v' } },
      { onConflict: 'update' },
    );
    expect(updated).toMatchObject({
      id: first.id,
      workflowName: 'other',
      cronExpression: '0 */15 * * * *',
      context: { k: 'v' },
      nextRunAt: at(15 * MINUTE),
    });
    expect(updated.updatedAt).toEqual(at(10 * MINUTE));
  });

  it('refuses a schedule without a name, which start-up code would add again at every start', async () => {
    const attempt = h.cron.addSchedule({ workflowName: 'wf', cronExpression: '* * * * *' } as never);
    await expect(attempt).rejects.toThrow(ValidationError);
    await expect(h.cron.addSchedule({ workflowName: 'wf', cronExpression: '* * * * *' } as never)).rejects.toThrow(
      /needs a name/,
    );
    expect(await h.cron.listSchedules()).toEqual([]);
  });

  it('returns the existing schedule when re-added unchanged after its window ended', async () => {
    const added = await h.cron.addSchedule({
      name: 'w',
      workflowName: 'wf',
      cronExpression: '* * * * *',
      endAt: at(HOUR),
    });
    h.clock.advance(2 * HOUR);
    const input = { name: 'w', workflowName: 'wf', cronExpression: '* * * * *', endAt: at(HOUR) };
    expect((await h.cron.addSchedule(input)).id).toBe(added.id);
    await expect(h.cron.addSchedule({ ...input, name: 'w2' })).rejects.toThrow(/already past/);
  });

  it('starts a disabled schedule with no nextRunAt', async () => {
    const schedule = await h.cron.addSchedule({
      name: 'off',
      workflowName: 'wf',
      cronExpression: '* * * * *',
      enabled: false,
    });
    expect(schedule).toMatchObject({ enabled: false, nextRunAt: null });
  });

  describe('refuses bad input before writing anything', () => {
    const cases: [string, Record<string, unknown>, new (...args: never[]) => Error, RegExp][] = [
      ['an invalid minute', { cronExpression: '61 * * * *' }, InvalidCronExpressionError, /minute/],
      ['too many fields', { cronExpression: '* * * * * * * *' }, InvalidCronExpressionError, /got 8/],
      ['an unknown zone', { timezone: 'Mars/Olympus_Mons' }, InvalidTimezoneError, /Mars\/Olympus_Mons/],
      ['an unregistered workflow', { workflowName: 'nope' }, WorkflowNotFoundError, /"nope"/],
      ['a UUID-shaped name', { name: '3F2A8C1E-5B7D-4E9F-8A6C-1D2E3F4A5B6C' }, ValidationError, /UUID/],
      ['a negative jitter', { jitterMs: -1 }, ValidationError, /jitterMs/],
      ['a fractional jitter', { jitterMs: 1.5 }, ValidationError, /jitterMs/],
      ['an unknown catch-up policy', { catchupPolicy: 'all' }, ValidationError, /catchupPolicy/],
      ['an unknown overlap policy', { overlapPolicy: 'queue' }, ValidationError, /overlapPolicy/],
      ['an empty window', { startAt: at(HOUR), endAt: at(HOUR) }, ValidationError, /startAt/],
      ['an invalid date', { startAt: new Date(Number.NaN) }, ValidationError, /startAt/],
      ['a context that is not JSON', { context: { when: new Date() } }, ContextError, /context\.when/],
      ['a context too large', { context: { big: 'x'.repeat(2_000_000) } }, ContextError, /maxContextBytes/],
      ['a zero maxRuns', { maxRuns: 0 }, ValidationError, /maxRuns must be a positive integer/],
      ['an unknown dst choice', { dst: { repeated: 'twice' } }, ValidationError, /dst.repeated must be one of/],
      ['a dst typo', { dst: { gaps: 'skip' } }, ValidationError, /Unknown dst field "gaps"/],
      ['a note too long', { note: 'x'.repeat(1001) }, ValidationError, /note must be a string of at most 1000/],
      ['a non-boolean pauseOnFailure', { pauseOnFailure: 'yes' }, ValidationError, /pauseOnFailure/],
      ['a typo of timezone', { tz: 'Europe/Paris' }, ValidationError, /"tz": did you mean "timezone"\?/],
      ['a misspelt key', { catchupPolicyy: 'skip' }, ValidationError, /"catchupPolicyy": did you mean "catchupPolicy"/],
      ['a wrongly cased key', { cronexpression: '* * * * *' }, ValidationError, /did you mean "cronExpression"/],
      ['an unrelated key', { zzzzzzzzzz: 1 }, ValidationError, /Unknown cron schedule field "zzzzzzzzzz": The fields/],
      [
        'a minute step past the range',
        { cronExpression: '*/90 * * * *' },
        InvalidCronExpressionError,
        /step 90 .*60 values 0-59/,
      ],
      ['an hour step past the range', { cronExpression: '0 0-12/25 * * *' }, InvalidCronExpressionError, /hour/],
      ['a day-of-week step past Sunday', { cronExpression: '0 0 * * */8' }, InvalidCronExpressionError, /0-6/],
      ['a day that never occurs', { cronExpression: '0 0 30 2 *' }, InvalidCronExpressionError, /never occurs/],
      ['an endAt already past', { endAt: new Date(T0.getTime() - 1) }, ValidationError, /endAt .* already past/],
      ['an endAt equal to now', { endAt: T0 }, ValidationError, /already past/],
      [
        'a window with no occurrence',
        { cronExpression: '0 0 1 1 *', startAt: at(HOUR), endAt: at(2 * HOUR) },
        ValidationError,
        /would never fire: "0 0 0 1 1 \*" in UTC has no occurrence from startAt/,
      ],
      [
        'a one-off whose year has passed',
        { cronExpression: '0 0 18 24 12 * 2020-2025' },
        ValidationError,
        /would never fire: "0 0 18 24 12 \* 2020-2025" in UTC has no occurrence from now up to the end of its last year, 2025/,
      ],
      [
        'a year past 2199',
        { cronExpression: '0 0 0 1 1 * 2200' },
        InvalidCronExpressionError,
        /out of range 1970-2199/,
      ],
    ];
    it.each(cases)('%s', async (_what, override, errorClass, message) => {
      const input = { name: 'n', workflowName: 'wf', cronExpression: '* * * * *', ...override };
      const attempt = h.cron.addSchedule(input as never);
      await expect(attempt).rejects.toThrow(errorClass);
      await expect(h.cron.addSchedule(input as never)).rejects.toThrow(message);
      expect(await h.cron.listSchedules()).toEqual([]);
    });
  });
});

describe('context size', () => {
  it('accepts exactly the contexts that still fit when a recovery adds its keys', async () => {
    const limit = 2_000;
    const small = await openHarness({ workflows: ['wf'], settings: { maxContextBytes: limit } });
    const bytes = (context: object) => Buffer.byteLength(JSON.stringify(context));
    const add = (n: number) =>
      small.cron
        .addSchedule({
          name: `p${n}`,
          workflowName: 'wf',
          cronExpression: '* * * * *',
          context: { pad: 'x'.repeat(n) },
        })
        .then(
          () => true,
          (error: unknown) => {
            if (error instanceof ContextError) return false;
            throw error;
          },
        );
    try {
      let [accepted, refused] = [0, limit];
      while (refused - accepted > 1) {
        const mid = Math.floor((accepted + refused) / 2);
        if (await add(mid)) accepted = mid;
        else refused = mid;
      }
      const largest = await small.cron.getSchedule(`p${accepted}`);
      const recovered = (pad: number) =>
        recoveryContext(
          occurrenceContext({ ...largest, context: { pad: 'x'.repeat(pad) } }, T0),
          CRON_DEFAULTS.maxRecoveryAttempts,
        );
      expect(bytes(recovered(accepted))).toBeLessThanOrEqual(limit);
      expect(bytes(recovered(accepted + 1))).toBeGreaterThan(limit);
    } finally {
      await small.close();
    }
  });
});

describe('finding schedules', () => {
  it('reads an id in any case, and anything else as a name', async () => {
    const schedule = await h.cron.addSchedule({ name: 'report', workflowName: 'wf', cronExpression: '@hourly' });
    expect((await h.cron.getSchedule(schedule.id.toUpperCase())).id).toBe(schedule.id);
    expect((await h.cron.getSchedule('report')).id).toBe(schedule.id);
  });

  it('raises ScheduleNotFoundError for unknown ids and names in every method', async () => {
    const unknownId = '3f2a8c1e-5b7d-4e9f-8a6c-1d2e3f4a5b6c';
    const calls: [string, (key: string) => Promise<unknown>][] = [
      ['get', (key) => h.cron.getSchedule(key)],
      ['update', (key) => h.cron.updateSchedule(key, { jitterMs: 5 })],
      ['setEnabled', (key) => h.cron.setEnabled(key, false)],
      ['delete', (key) => h.cron.deleteSchedule(key)],
      ['trigger', (key) => h.cron.trigger(key)],
      ['backfill', (key) => h.cron.backfill(key, { start: T0, end: at(MINUTE) })],
      ['history', (key) => h.cron.history(key)],
    ];
    for (const [, call] of calls) {
      await expect(call(unknownId)).rejects.toThrow(ScheduleNotFoundError);
      await expect(call('no-such-schedule')).rejects.toThrow(/no-such-schedule/);
    }
  });

  it('lists schedules oldest first, filtered and paged', async () => {
    await h.cron.addSchedule({ name: 'a', workflowName: 'wf', cronExpression: '* * * * *' });
    h.clock.advance(1);
    await h.cron.addSchedule({ name: 'b', workflowName: 'other', cronExpression: '* * * * *', enabled: false });
    h.clock.advance(1);
    await h.cron.addSchedule({ name: 'c', workflowName: 'wf', cronExpression: '* * * * *' });
    const names = (list: { name: string | null }[]) => list.map((schedule) => schedule.name);
    expect(names(await h.cron.listSchedules())).toEqual(['a', 'b', 'c']);
    expect(names(await h.cron.listSchedules({ enabledOnly: true }))).toEqual(['a', 'c']);
    expect(names(await h.cron.listSchedules({ workflowName: 'other' }))).toEqual(['b']);
    expect(names(await h.cron.listSchedules({ limit: 1, offset: 1 }))).toEqual(['b']);
    await expect(h.cron.listSchedules({ limit: 0 })).rejects.toThrow(ValidationError);
  });
});

describe('updateSchedule', () => {
  it('renames, and refuses a taken name', async () => {
    await h.cron.addSchedule({ name: 'a', workflowName: 'wf', cronExpression: '* * * * *' });
    await h.cron.addSchedule({ name: 'b', workflowName: 'wf', cronExpression: '* * * * *' });
    const renamed = await h.cron.updateSchedule('a', { name: 'a2' });
    expect(renamed.name).toBe('a2');
    await expect(h.cron.updateSchedule('a2', { name: 'b' })).rejects.toThrow(ScheduleConflictError);
    expect((await h.cron.getSchedule('a2')).name).toBe('a2');
  });

  it('re-times nextRunAt when the expression changes, and keeps it otherwise', async () => {
    await h.cron.addSchedule({ name: 'a', workflowName: 'wf', cronExpression: '0 * * * *' });
    h.clock.advance(5 * MINUTE);
    expect((await h.cron.updateSchedule('a', { context: { x: 1 } })).nextRunAt).toEqual(at(HOUR));
    expect((await h.cron.updateSchedule('a', { cronExpression: '*/10 * * * *' })).nextRunAt).toEqual(at(10 * MINUTE));
    expect(
      (await h.cron.updateSchedule('a', { timezone: 'Asia/Kolkata', cronExpression: '0 * * * *' })).nextRunAt,
    ).toEqual(at(30 * MINUTE));
  });

  it('validates the merged result whole and writes nothing when it is bad', async () => {
    const before = await h.cron.addSchedule({ name: 'a', workflowName: 'wf', cronExpression: '* * * * *' });
    await expect(h.cron.updateSchedule('a', { cronExpression: '* * 32 * *' })).rejects.toThrow(/day-of-month/);
    await expect(h.cron.updateSchedule('a', { workflowName: 'missing' })).rejects.toThrow(WorkflowNotFoundError);
    await expect(h.cron.updateSchedule('a', { endAt: new Date(T0.getTime() - 1), startAt: T0 })).rejects.toThrow(
      ValidationError,
    );
    await expect(h.cron.updateSchedule('a', { endAt: T0 })).rejects.toThrow(/already past/);
    await expect(h.cron.updateSchedule('a', { tz: 'Europe/Paris' } as never)).rejects.toThrow(/"timezone"/);
    expect(await h.cron.getSchedule('a')).toEqual(before);
  });

  it('sets a window: nextRunAt is the first slot at or after startAt', async () => {
    await h.cron.addSchedule({ name: 'a', workflowName: 'wf', cronExpression: '* * * * *' });
    const updated = await h.cron.updateSchedule('a', { startAt: at(HOUR), endAt: at(2 * HOUR) });
    expect(updated).toMatchObject({ startAt: at(HOUR), endAt: at(2 * HOUR), nextRunAt: at(HOUR) });
  });
});

describe('operator fields', () => {
  it('stores pauseOnFailure, maxRuns, the note and dst with both rules filled in', async () => {
    const schedule = await h.cron.addSchedule({
      name: 'ops',
      workflowName: 'wf',
      cronExpression: '30 1 * * *',
      overlapPolicy: 'buffer_one',
      pauseOnFailure: true,
      maxRuns: 3,
      dst: { repeated: 'both' },
      note: 'owned by data-eng',
    });
    expect(schedule).toMatchObject({
      overlapPolicy: 'buffer_one',
      pauseOnFailure: true,
      maxRuns: 3,
      runCount: 0,
      dst: { repeated: 'both', gap: 'shift' },
      note: 'owned by data-eng',
    });
    // The note is not part of the definition: re-adding without it keeps the schedule and its note.
    const again = await h.cron.addSchedule({
      name: 'ops',
      workflowName: 'wf',
      cronExpression: '30 1 * * *',
      overlapPolicy: 'buffer_one',
      pauseOnFailure: true,
      maxRuns: 3,
      dst: { repeated: 'both', gap: 'shift' },
    });
    expect(again).toEqual(schedule);
  });

  it('counts failures for pauseOnFailure from creation, each enable and switching it on, never from other edits', async () => {
    const enabledAt = async () => (await h.storage.cron.getScheduleByName('p'))!.enabledAt;
    h.clock.set(at(1000));
    await h.cron.addSchedule({ name: 'p', workflowName: 'wf', cronExpression: '* * * * *' });
    expect(await enabledAt()).toEqual(at(1000));
    h.clock.set(at(2000));
    await h.cron.updateSchedule('p', { pauseOnFailure: true });
    expect(await enabledAt()).toEqual(at(2000));
    h.clock.set(at(3000));
    await h.cron.updateSchedule('p', { context: { a: 1 } });
    await h.cron.setEnabled('p', false);
    expect(await enabledAt()).toEqual(at(2000));
    h.clock.set(at(4000));
    await h.cron.setEnabled('p', true);
    expect(await enabledAt()).toEqual(at(4000));
  });

  it('stores a pause note when disabled with one and clears it when enabled', async () => {
    await h.cron.addSchedule({ name: 'p', workflowName: 'wf', cronExpression: '* * * * *' });
    expect(await h.cron.setEnabled('p', false, { note: 'vendor outage, INC-42' })).toMatchObject({
      enabled: false,
      note: 'vendor outage, INC-42',
    });
    expect(await h.cron.setEnabled('p', true)).toMatchObject({ enabled: true, note: null });
  });
});

describe('setEnabled and deleteSchedule', () => {
  it('clears nextRunAt when disabled and sets the first slot after now when enabled', async () => {
    await h.cron.addSchedule({ name: 'a', workflowName: 'wf', cronExpression: '*/5 * * * *' });
    expect((await h.cron.setEnabled('a', false)).nextRunAt).toBeNull();
    h.clock.advance(3 * HOUR + 7 * MINUTE);
    const enabled = await h.cron.setEnabled('a', true);
    expect(enabled).toMatchObject({ enabled: true, nextRunAt: at(3 * HOUR + 10 * MINUTE) });
  });

  it('keeps the ledger of a deleted schedule, readable by its id', async () => {
    const schedule = await h.cron.addSchedule({ name: 'a', workflowName: 'wf', cronExpression: '* * * * *' });
    await h.cron.trigger('a');
    await h.cron.deleteSchedule('a');
    await expect(h.cron.getSchedule(schedule.id)).rejects.toThrow(ScheduleNotFoundError);
    await expect(h.cron.deleteSchedule(schedule.id)).rejects.toThrow(ScheduleNotFoundError);
    const history = await h.cron.history(schedule.id);
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ scheduleId: schedule.id, source: 'manual', status: 'handed_off' });
  });
});
