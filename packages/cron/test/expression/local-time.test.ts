import { CronExpressionParser } from 'cron-parser';
import { DateTime, IANAZone } from 'luxon';
import { describe, expect, it } from 'vitest';
import { parseCronFields } from '../../src/expression/cron-expression.js';
import { compileMatcher, nextInstant } from '../../src/expression/local-time.js';
import { quartzDaysOfMonth } from '../../src/expression/quartz-days.js';
import { type DstRules, occurrencesBetween } from '../../src/index.js';

const MINUTE_MS = 60_000;

/**
 * The DST rules written the slow, obvious way, for 5-field expressions: walk every real
 * minute with luxon. A `*` hour takes every real minute whose wall time matches. A fixed
 * hour takes the first real minute showing each matching wall time, plus the wall times a
 * gap skips, read with the offset in force just before the gap.
 */
function referenceOccurrences(expression: string, timezone: string, start: number, end: number): number[] {
  const wallMatcher = CronExpressionParser.parse(expression, { tz: 'UTC' });
  const matches = (wall: number) => wallMatcher.includesDate(new Date(wall));
  const followsRealClock = expression.split(' ')[1]!.startsWith('*');
  const found = new Set<number>();
  const seenWalls = new Set<number>();
  // Begin early enough to see the first instance of a repeated wall time before `start`.
  let previous: { at: number; wall: number } | undefined;
  for (let at = start - 3 * 3_600_000; at < end; at += MINUTE_MS) {
    const local = DateTime.fromMillis(at, { zone: timezone });
    const wall = Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute);
    if (followsRealClock) {
      if (matches(wall)) found.add(at);
    } else {
      for (let skipped = (previous?.wall ?? wall) + MINUTE_MS; skipped < wall; skipped += MINUTE_MS) {
        if (matches(skipped)) found.add(previous!.at + (skipped - previous!.wall));
      }
      if (matches(wall) && !seenWalls.has(wall)) found.add(at);
      seenWalls.add(wall);
    }
    previous = { at, wall };
  }
  return [...found].filter((at) => at >= start && at < end).sort((a, b) => a - b);
}

/** Every real minute from `start` to `end` with the wall time it shows: walked once per day, read per expression. */
function walkMinutes(timezone: string, start: number, end: number): { at: number; wall: number }[] {
  const minutes: { at: number; wall: number }[] = [];
  for (let at = start; at < end; at += MINUTE_MS) {
    const local = DateTime.fromMillis(at, { zone: timezone });
    minutes.push({ at, wall: Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute) });
  }
  return minutes;
}

/**
 * The `dst` overrides written the slow, obvious way, independently of the rule above: over
 * every real minute, note each instant at which a matching wall time shows; a repeated wall
 * time keeps its first instance, its last or both; a wall time a gap skips is read with the
 * offset in force just before the gap (`shift`) or dropped (`skip`). `minutes` must begin
 * and end three hours outside [start, end), to see every instance of a repeated wall time.
 */
function referenceWithRules(
  expression: string,
  minutes: readonly { at: number; wall: number }[],
  start: number,
  end: number,
  rules: Required<DstRules>,
): number[] {
  const wallMatcher = CronExpressionParser.parse(expression, { tz: 'UTC' });
  const matches = (wall: number) => wallMatcher.includesDate(new Date(wall));
  const shown = new Map<number, number[]>();
  const found = new Set<number>();
  minutes.forEach(({ at, wall }, index) => {
    if (matches(wall)) shown.set(wall, [...(shown.get(wall) ?? []), at]);
    const previous = minutes[index - 1];
    if (rules.gap === 'shift' && previous !== undefined) {
      for (let skipped = previous.wall + MINUTE_MS; skipped < wall; skipped += MINUTE_MS) {
        if (matches(skipped)) found.add(previous.at + (skipped - previous.wall));
      }
    }
  });
  for (const instants of shown.values()) {
    if (rules.repeated !== 'last') found.add(instants[0]!);
    if (rules.repeated !== 'first') found.add(instants.at(-1)!);
    if (rules.repeated === 'both') for (const at of instants) found.add(at);
  }
  return [...found].filter((at) => at >= start && at < end).sort((a, b) => a - b);
}

const TRANSITION_DAYS: readonly [string, string][] = [
  ['America/New_York', '2026-03-08'],
  ['America/New_York', '2026-11-01'],
  ['Europe/London', '2026-03-29'],
  ['Europe/London', '2026-10-25'],
  ['Australia/Sydney', '2026-04-05'],
  ['Australia/Sydney', '2026-10-04'],
  ['Australia/Lord_Howe', '2026-04-05'],
  ['Australia/Lord_Howe', '2026-10-04'],
  ['Asia/Kolkata', '2026-03-08'],
  // Past changes at midnight, where a local day is not one contiguous stretch of time.
  ['America/Sao_Paulo', '2018-11-04'], // 00:00 -> 01:00
  ['America/Sao_Paulo', '2019-02-16'], // 00:00 on the 17th -> 23:00 on the 16th
  ['America/St_Johns', '2008-11-02'], // 00:01 -> 23:01 the day before, at -3:30
  ['America/Goose_Bay', '1988-10-30'], // 00:01 -> 22:01 the day before: two hours
  ['Antarctica/Casey', '2010-03-05'], // 02:00 -> 23:00 the day before, +11 -> +8
];

const EXPRESSIONS = [
  '30 2 * * *',
  '*/20 1-3 * * *',
  '0 2,3 * * *',
  '15,45 0-4 * * *',
  '59 1 * * *',
  '0 * * * *',
  '*/15 * * * *',
  '0 */2 * * *',
  '* * * * *',
];

describe('local wall-clock walk', () => {
  it.each(TRANSITION_DAYS)('matches a minute-by-minute reference around the transition in %s on %s', (zone, date) => {
    const day = DateTime.fromISO(date, { zone });
    const start = day.minus({ days: 1 }).toMillis();
    const end = day.plus({ days: 2 }).toMillis();
    for (const expression of EXPRESSIONS) {
      const actual = occurrencesBetween(expression, { timezone: zone, start: new Date(start), end: new Date(end) });
      expect(
        actual.map((instant) => instant.getTime()),
        expression,
      ).toEqual(referenceOccurrences(expression, zone, start, end));
    }
  });

  const RULES: Required<DstRules>[] = (['first', 'last', 'both'] as const).flatMap((repeated) =>
    (['shift', 'skip'] as const).map((gap) => ({ repeated, gap })),
  );
  it.each(TRANSITION_DAYS)('follows every dst override like a minute-by-minute reference in %s on %s', (zone, date) => {
    const day = DateTime.fromISO(date, { zone });
    const start = day.minus({ days: 1 }).toMillis();
    const end = day.plus({ days: 2 }).toMillis();
    const minutes = walkMinutes(zone, start - 3 * 3_600_000, end + 3 * 3_600_000);
    for (const expression of EXPRESSIONS) {
      for (const dst of RULES) {
        const actual = occurrencesBetween(expression, {
          timezone: zone,
          start: new Date(start),
          end: new Date(end),
          dst,
        });
        expect(
          actual.map((instant) => instant.getTime()),
          `${expression} ${JSON.stringify(dst)}`,
        ).toEqual(referenceWithRules(expression, minutes, start, end, dst));
      }
    }
  });

  it('keeps the default rules of the expression for a field dst leaves out', () => {
    const day = DateTime.fromISO('2026-11-01', { zone: 'America/New_York' });
    const range = { timezone: 'America/New_York', start: day.toJSDate(), end: day.plus({ days: 1 }).toJSDate() };
    const times = (expression: string, dst?: DstRules) =>
      occurrencesBetween(expression, { ...range, ...(dst === undefined ? {} : { dst }) }).map((d) => d.toISOString());
    expect(times('30 1 * * *', { gap: 'skip' })).toEqual(times('30 1 * * *'));
    expect(times('30 * * * *', { gap: 'shift' })).toEqual(times('30 * * * *'));
    expect(times('30 1 * * *', { repeated: 'last' })).toEqual(['2026-11-01T06:30:00.000Z']);
    expect(times('30 1 * * *', { repeated: 'both' })).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-01T06:30:00.000Z']);
  });

  it('gives up after nine years when no day can match, instead of looping', () => {
    // Unreachable through the parser, which refuses February 31: built by hand to prove the bound.
    const fields = { ...parseCronFields('0 0 1 2 *'), daysOfMonth: [31] };
    const after = Date.UTC(2026, 0, 1);
    expect(nextInstant(compileMatcher(fields), IANAZone.create('UTC'), after)).toBeNull();
  });
});

describe('quartzDaysOfMonth', () => {
  /** The days of a month bit mask, ascending. */
  const days = (mask: number) =>
    Array.from({ length: 31 }, (_, index) => index + 1).filter((day) => (mask >>> (day - 1)) & 1);
  const rules = (expression: string) => parseCronFields(expression).quartz;

  it('names each rule day directly: February 2026 starts on a Sunday and has 28 days', () => {
    expect(days(quartzDaysOfMonth(rules('0 0 L * *'), 'day-of-month', 0, 28))).toEqual([28]);
    expect(days(quartzDaysOfMonth(rules('0 0 L-3 * *'), 'day-of-month', 0, 28))).toEqual([25]);
    // The 28th is a Saturday, so the last weekday is Friday the 27th; the 1st is a Sunday, so 1W is Monday the 2nd.
    expect(days(quartzDaysOfMonth(rules('0 0 LW * *'), 'day-of-month', 0, 28))).toEqual([27]);
    expect(days(quartzDaysOfMonth(rules('0 0 1W * *'), 'day-of-month', 0, 28))).toEqual([2]);
    // No 30th in February: L-30 and 30W name no day.
    expect(quartzDaysOfMonth(rules('0 0 L-30,30W * *'), 'day-of-month', 0, 28)).toBe(0);
    expect(days(quartzDaysOfMonth(rules('0 0 * * 5#3'), 'day-of-week', 0, 28))).toEqual([20]);
    expect(days(quartzDaysOfMonth(rules('0 0 * * 5L'), 'day-of-week', 0, 28))).toEqual([27]);
    expect(quartzDaysOfMonth(rules('0 0 * * 5#5'), 'day-of-week', 0, 28)).toBe(0);
  });

  it('keeps W within the month and combines a list of rules', () => {
    // May 2026 starts on a Friday: the 31st is a Sunday, so 31W is Friday the 29th; L-30 is the 1st.
    expect(days(quartzDaysOfMonth(rules('0 0 31W,L-30,L * *'), 'day-of-month', 5, 31))).toEqual([1, 29, 31]);
    // August 2026 starts on a Saturday: 1W is Monday the 3rd, not Friday the 31st of July.
    expect(days(quartzDaysOfMonth(rules('0 0 1W * *'), 'day-of-month', 6, 31))).toEqual([3]);
    expect(days(quartzDaysOfMonth(rules('0 0 * * 6#1,6#5,0L'), 'day-of-week', 6, 31))).toEqual([1, 29, 30]);
  });
});
