import { CronExpressionParser } from 'cron-parser';
import { DateTime, IANAZone } from 'luxon';
import { describe, expect, it } from 'vitest';
import { parseCronFields } from '../src/cron-expression.js';
import { occurrencesBetween } from '../src/index.js';
import { compileMatcher, nextInstant } from '../src/local-time.js';

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

  it('gives up after nine years when no day can match, instead of looping', () => {
    // Unreachable through the parser, which refuses February 31: built by hand to prove the bound.
    const fields = { ...parseCronFields('0 0 1 2 *'), daysOfMonth: [31] };
    const after = Date.UTC(2026, 0, 1);
    expect(nextInstant(compileMatcher(fields), IANAZone.create('UTC'), after)).toBeNull();
  });
});
