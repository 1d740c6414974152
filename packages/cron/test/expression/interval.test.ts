import { ValidationError } from '@orreryjs/core';
import { DateTime } from 'luxon';
import { afterEach, describe, expect, it } from 'vitest';
import { nextOccurrences, normalizeCronExpression, occurrencesBetween } from '../../src/index.js';
import { allPipelines, type CronHarness, HOUR, MINUTE, openHarness, T0 } from '../support/cron-harness.js';

// The oracle for `@every`: instead of computing `anchor + k·every`, it tests every candidate
// instant of a range (each second, or each minute for intervals of whole minutes) for the
// property the contract states, an exact whole number of intervals since the anchor, with
// the interval read by luxon's Duration.

const SECOND_MS = 1000;

function oracle(duration: Record<string, number>, anchor: Date, start: string, end: string, stepMs: number): string[] {
  const everyMs = DateTime.fromMillis(0, { zone: 'UTC' }).plus(duration).toMillis();
  const found: string[] = [];
  for (let at = Date.parse(start); at < Date.parse(end); at += stepMs) {
    if ((at - anchor.getTime()) % everyMs === 0) found.push(new Date(at).toISOString());
  }
  return found;
}

function actual(expression: string, zone: string, start: string, end: string, anchor?: Date): string[] {
  return occurrencesBetween(expression, {
    timezone: zone,
    start: new Date(start),
    end: new Date(end),
    ...(anchor === undefined ? {} : { anchor }),
  }).map((at) => at.toISOString());
}

const EPOCH = new Date(0);
const START_AT = new Date('2026-03-07T09:17:23Z');
const NY = 'America/New_York';

// Ranges over New York's spring-forward (2026-03-08) and London's fall-back (2026-10-25):
// intervals are absolute, so the zone never changes the instants.
const CASES: readonly [
  expression: string,
  duration: Record<string, number>,
  zone: string,
  range: [string, string],
  stepMs: number,
][] = [
  ['@every 90s', { seconds: 90 }, 'UTC', ['2026-03-08T05:00:00Z', '2026-03-08T08:00:00Z'], SECOND_MS],
  ['@every 90s', { seconds: 90 }, NY, ['2026-03-08T05:00:00Z', '2026-03-08T08:00:00Z'], SECOND_MS],
  ['@every 1h30m', { hours: 1, minutes: 30 }, NY, ['2026-03-07T00:00:00Z', '2026-03-10T00:00:00Z'], 60 * SECOND_MS],
  [
    '@every 1h30m',
    { hours: 1, minutes: 30 },
    'Europe/London',
    ['2026-10-24T00:00:00Z', '2026-10-27T00:00:00Z'],
    60 * SECOND_MS,
  ],
  ['@every 5m', { minutes: 5 }, NY, ['2026-11-01T04:00:00Z', '2026-11-01T08:00:00Z'], 60 * SECOND_MS],
  ['@every 7d', { days: 7 }, 'UTC', ['2026-01-01T00:00:00Z', '2026-04-01T00:00:00Z'], 60 * SECOND_MS],
  ['@every 7d', { days: 7 }, NY, ['2026-02-01T00:00:00Z', '2026-05-01T00:00:00Z'], 60 * SECOND_MS],
  ['@every 1d', { days: 1 }, NY, ['2026-03-01T00:00:00Z', '2026-03-20T00:00:00Z'], 60 * SECOND_MS],
  ['@every 37s', { seconds: 37 }, 'UTC', ['2026-03-08T00:00:00Z', '2026-03-08T01:00:00Z'], SECOND_MS],
];

describe('@every against the oracle', () => {
  it.each(CASES)('%s in %s from the epoch', (expression, duration, zone, [start, end], stepMs) => {
    const expected = oracle(duration, EPOCH, start, end, stepMs);
    expect(expected.length).toBeGreaterThan(1);
    expect(actual(expression, zone, start, end)).toEqual(expected);
  });

  it.each(CASES)('%s in %s from a startAt', (expression, duration, zone, [start, end], stepMs) => {
    // START_AT has seconds; the whole-minute scans need an anchor on a whole minute.
    const anchor = stepMs === SECOND_MS ? START_AT : new Date(START_AT.getTime() - 23 * SECOND_MS);
    const expected = oracle(duration, anchor, start, end, stepMs);
    expect(expected.length).toBeGreaterThan(1);
    expect(actual(expression, zone, start, end, anchor)).toEqual(expected);
  });

  it('fires @every 5m at :00, :05, … UTC and @every 7d on Thursdays at 00:00 UTC, as the epoch was', () => {
    const after = new Date('2026-03-08T06:58:00Z');
    expect(nextOccurrences('@every 5m', { after, count: 3, timezone: NY })).toEqual([
      new Date('2026-03-08T07:00:00Z'),
      new Date('2026-03-08T07:05:00Z'),
      new Date('2026-03-08T07:10:00Z'),
    ]);
    const weekly = nextOccurrences('@every 7d', { after, count: 2 });
    expect(weekly.map((at) => DateTime.fromJSDate(at, { zone: 'UTC' }).toFormat('cccc HH:mm'))).toEqual([
      'Thursday 00:00',
      'Thursday 00:00',
    ]);
  });

  it('keeps @every 7d from a New York startAt at the same UTC time across the DST change', () => {
    const anchor = new Date('2026-03-02T14:15:00Z'); // Monday 09:15 EST
    const local = nextOccurrences('@every 7d', { timezone: NY, after: anchor, count: 2, anchor }).map((at) =>
      DateTime.fromJSDate(at, { zone: NY }).toFormat('yyyy-MM-dd HH:mm ZZ'),
    );
    expect(local).toEqual(['2026-03-09 10:15 -04:00', '2026-03-16 10:15 -04:00']);
  });

  it('refuses an invalid anchor', () => {
    expect(() => nextOccurrences('@every 5m', { anchor: new Date('nope') })).toThrow(ValidationError);
    expect(() => nextOccurrences('@every 5m', { anchor: new Date('nope') })).toThrow('anchor must be a valid Date');
  });

  it('normalises the duration to its largest units', () => {
    expect(normalizeCronExpression('@every 5400s')).toBe('@every 1h30m');
  });
});

let h: CronHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('interval and one-off schedules', () => {
  it('anchors an @every schedule at its startAt and stores the canonical form', async () => {
    h = await openHarness();
    const startAt = new Date(T0.getTime() + 7 * MINUTE + 30 * SECOND_MS);
    const schedule = await h.cron.addSchedule({
      name: 'pulse',
      workflowName: 'wf',
      cronExpression: '@every 90m',
      startAt,
    });
    expect(schedule).toMatchObject({ cronExpression: '@every 1h30m', nextRunAt: startAt });
    h.clock.set(new Date(startAt.getTime() + 3 * HOUR));
    await h.cron.tick();
    const times = (await allPipelines(h.storage)).map((pipeline) => pipeline.scheduledTime);
    // Slots at startAt + k·1h30m: the one at startAt is missed, run_once runs the latest missed
    // one (+ 1h30m), then the on-time one (+ 3h).
    expect(times).toEqual([new Date(startAt.getTime() + 1.5 * HOUR), new Date(startAt.getTime() + 3 * HOUR)]);
    expect((await h.cron.getSchedule('pulse')).nextRunAt).toEqual(new Date(startAt.getTime() + 4.5 * HOUR));
  });

  it('fires a one-off with a year once, then keeps it enabled with no next run', async () => {
    h = await openHarness();
    await h.cron.addSchedule({ name: 'once', workflowName: 'wf', cronExpression: '0 0 18 1 1 * 2026' });
    h.clock.set(new Date('2026-01-01T18:00:00.100Z'));
    expect(await h.cron.tick()).toEqual({ claimed: 1, handedOff: 1 });
    h.clock.set(new Date('2027-01-01T18:00:00.100Z'));
    expect(await h.cron.tick()).toEqual({ claimed: 0, handedOff: 0 });
    expect(await h.cron.getSchedule('once')).toMatchObject({ enabled: true, nextRunAt: null });
    expect(await h.cron.history('once')).toHaveLength(1);
  });

  it('refuses dst on an @every schedule, writing nothing', async () => {
    h = await openHarness();
    const adding = h.cron.addSchedule({
      name: 'pulse',
      workflowName: 'wf',
      cronExpression: '@every 5m',
      dst: { gap: 'skip' },
    });
    await expect(adding).rejects.toThrow(ValidationError);
    await expect(adding).rejects.toThrow('dst has no effect on "@every 5m"');
    expect(await h.cron.listSchedules()).toEqual([]);
  });
});
