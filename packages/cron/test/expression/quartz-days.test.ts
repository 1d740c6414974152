import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { nextOccurrences, occurrencesBetween } from '../../src/index.js';

// An independent oracle for the Quartz day rules and the year field, written from the rules'
// wording, not from the implementation: it walks local dates with luxon, decides each date
// with its own reading of the day fields, and turns wall times into instants with luxon.
// It never calls the package's helpers; only the results of `occurrencesBetween` and
// `nextOccurrences` are compared with it.

/** A weekday as cron numbers it (0 or 7 = Sunday), from luxon's (1 = Monday … 7 = Sunday). */
const cronWeekday = (date: { weekday: number }) => date.weekday % 7;
const isWorkday = (date: { weekday: number }) => date.weekday <= 5;
const WEEKDAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const weekdayNumber = (text: string) =>
  /^\d$/.test(text) ? Number(text) % 7 : WEEKDAY_NAMES.indexOf(text.toUpperCase());

interface OracleDay {
  day: number;
  /** luxon's weekday: 1 = Monday … 7 = Sunday. */
  weekday: number;
}
const monthCache = new Map<string, OracleDay[]>();

/** Every date of the month of `date` (local calendar dates do not depend on the zone). */
function monthDates(date: DateTime): OracleDay[] {
  const key = `${date.year}-${date.month}`;
  let dates = monthCache.get(key);
  if (dates === undefined) {
    const first = DateTime.utc(date.year, date.month, 1);
    dates = Array.from({ length: first.daysInMonth! }, (_, index) => {
      const each = first.plus({ days: index });
      return { day: each.day, weekday: each.weekday };
    });
    monthCache.set(key, dates);
  }
  return dates;
}

/** Does one day-of-month item (plain number, `L`, `L-n`, `LW`, `nW`) select `date`? */
function dayOfMonthItem(item: string, date: DateTime): boolean {
  const last = date.daysInMonth!;
  if (item === 'L') return date.day === last;
  if (item.startsWith('L-')) return date.day === last - Number(item.slice(2));
  if (item === 'LW') {
    // The latest Monday-to-Friday of the month.
    const workdays = monthDates(date).filter(isWorkday);
    return workdays.at(-1)!.day === date.day;
  }
  if (item.endsWith('W')) {
    // The Monday-to-Friday of the same month closest to day n; no day n, no match.
    const target = Number(item.slice(0, -1));
    if (target > last) return false;
    const workdays = monthDates(date).filter(isWorkday);
    const closest = workdays.reduce((best, each) =>
      Math.abs(each.day - target) < Math.abs(best.day - target) ? each : best,
    );
    return closest.day === date.day;
  }
  if (item.includes('-')) {
    const [from, to] = item.split('-').map(Number);
    return date.day >= from! && date.day <= to!;
  }
  return date.day === Number(item);
}

/** Does one day-of-week item (`d`, `a-b`, `d#k`, `dL`, names allowed) select `date`? */
function dayOfWeekItem(item: string, date: DateTime): boolean {
  const sameWeekdayDays = (weekday: number) =>
    monthDates(date)
      .filter((each) => cronWeekday(each) === weekday)
      .map((each) => each.day);
  if (item.includes('#')) {
    const [weekday, nth] = item.split('#');
    return sameWeekdayDays(weekdayNumber(weekday!))[Number(nth) - 1] === date.day;
  }
  if (item.length > 1 && item.endsWith('L')) {
    return sameWeekdayDays(weekdayNumber(item.slice(0, -1))).at(-1) === date.day;
  }
  if (item.includes('-')) {
    const [from, to] = item.split('-').map(weekdayNumber);
    return cronWeekday(date) >= from! && cronWeekday(date) <= to!;
  }
  return cronWeekday(date) === weekdayNumber(item);
}

const isAny = (field: string) => field === '*' || field === '?';

/** Cron's day rule: both restricted, either matches; otherwise the restricted one decides. */
function dayMatches(dayOfMonth: string, dayOfWeek: string, date: DateTime): boolean {
  const byMonthDay = dayOfMonth.split(',').some((item) => dayOfMonthItem(item, date));
  const byWeekday = dayOfWeek.split(',').some((item) => dayOfWeekItem(item, date));
  if (isAny(dayOfMonth) && isAny(dayOfWeek)) return true;
  if (isAny(dayOfMonth)) return byWeekday;
  if (isAny(dayOfWeek)) return byMonthDay;
  return byMonthDay || byWeekday;
}

function yearMatches(field: string | undefined, year: number): boolean {
  if (field === undefined || field === '*') return true;
  return field.split(',').some((item) => {
    const [range = '', step = '1'] = item.split('/');
    const from = range === '*' ? 1970 : Number(range.split('-')[0]);
    const to = range === '*' || (!range.includes('-') && item.includes('/')) ? 2199 : Number(range.split('-').at(-1));
    return year >= from && year <= to && (year - from) % Number(step) === 0;
  });
}

function monthMatches(field: string, month: number): boolean {
  if (field === '*') return true;
  return field.split(',').some((item) => {
    const [from, to = from] = item.split('-').map(Number);
    return month >= from! && month <= to!;
  });
}

const HOUR_MS = 3_600_000;

/**
 * The expected instants of `second minute hour dom month dow [year]` in [start, end), where
 * minute and second are single numbers and the hour is a single number (a fixed hour: a
 * wall time in a gap fires once, read with the offset before it — what luxon gives — and a
 * repeated one fires at its first instance) or `*` (the real clock: every real instant
 * whose wall time matches).
 */
function oracle(expression: string, zone: string, start: string, end: string): string[] {
  const [second, minute, hour, dayOfMonth, month, dayOfWeek, year] = expression.split(' ') as [
    string,
    string,
    string,
    string,
    string,
    string,
    string?,
  ];
  const startMs = Date.parse(start);
  const endMs = Date.parse(end);
  const found: number[] = [];
  let date = DateTime.fromMillis(startMs, { zone }).startOf('day').minus({ days: 1 });
  while (date.toMillis() < endMs + HOUR_MS * 24) {
    if (yearMatches(year, date.year) && monthMatches(month, date.month) && dayMatches(dayOfMonth, dayOfWeek, date)) {
      if (hour === '*') {
        const dayEnd = date.plus({ days: 1 }).startOf('day').toMillis();
        // Every quarter hour: both zones change their offsets by whole hours.
        for (let at = date.startOf('day').toMillis(); at < dayEnd; at += 15 * 60_000) {
          const local = DateTime.fromMillis(at, { zone });
          if (local.minute === Number(minute) && local.day === date.day) found.push(at + Number(second) * 1000);
        }
      } else {
        const wall = { year: date.year, month: date.month, day: date.day, hour: Number(hour), minute: Number(minute) };
        let at = DateTime.fromObject({ ...wall, second: Number(second) }, { zone }).toMillis();
        // luxon reads a repeated wall time at its second instance; the rule fires the first.
        const hourEarlier = DateTime.fromMillis(at - HOUR_MS, { zone });
        if (hourEarlier.hour === wall.hour && hourEarlier.day === wall.day) at -= HOUR_MS;
        found.push(at);
      }
    }
    date = date.plus({ days: 1 });
  }
  return [...new Set(found)]
    .filter((at) => at >= startMs && at < endMs)
    .sort((a, b) => a - b)
    .map((at) => new Date(at).toISOString());
}

function actual(expression: string, zone: string, start: string, end: string): string[] {
  return occurrencesBetween(expression, { timezone: zone, start: new Date(start), end: new Date(end) }).map((at) =>
    at.toISOString(),
  );
}

const NY = 'America/New_York';
const LONDON = 'Europe/London';
const ZONES = ['UTC', NY, LONDON];

// Day fields over six years, 2023-2028: the leap years 2024 and 2028 and the common years
// between; every month end, W at month boundaries, fifth weekdays that some months lack.
const DAY_FIELDS: readonly [dayOfMonth: string, month: string, dayOfWeek: string][] = [
  ['L', '*', '?'],
  ['L', '2', '?'], // February 28 or 29
  ['L-1', '2', '?'],
  ['L-3', '*', '?'],
  ['L-30', '*', '?'], // only in 31-day months: the 1st
  ['LW', '*', '?'],
  ['1W', '*', '?'], // a Saturday 1st moves to Monday the 3rd
  ['31W', '*', '?'], // a Sunday 31st moves to Friday the 29th; none in shorter months
  ['30W', '*', '?'],
  ['29W', '2', '?'], // leap Februaries only
  ['15W', '*', '?'],
  ['1,15,L', '*', '?'],
  ['L-3,LW', '*', '?'],
  ['?', '*', '5#3'], // third Friday
  ['?', '*', 'MON#1'],
  ['?', '*', '5#5'], // months without a fifth Friday are skipped
  ['?', '*', '0#5'],
  ['?', '2', '4#5'], // a fifth Thursday in February: only 2024 (leap, starting on a Thursday)
  ['?', '*', '5L'],
  ['?', '*', '1L'],
  ['?', '*', 'FRIL'],
  ['*', '*', '2#2,4L'],
  ['L', '*', '5L'], // both restricted: either fires
  ['13', '*', '5#2'],
  ['L-3', '*', '1#1'],
  ['15W', '*', '0L'],
];

describe('Quartz day rules against the independent oracle, 2023-2028', () => {
  const cases = DAY_FIELDS.flatMap(([dayOfMonth, month, dayOfWeek]) =>
    ZONES.map((zone) => [`0 0 12 ${dayOfMonth} ${month} ${dayOfWeek}`, zone] as const),
  );
  it.each(cases)('%s in %s', (expression, zone) => {
    const expected = oracle(expression, zone, '2023-01-01T00:00:00Z', '2029-01-01T00:00:00Z');
    expect(expected.length).toBeGreaterThan(0);
    expect(actual(expression, zone, '2023-01-01T00:00:00Z', '2029-01-01T00:00:00Z')).toEqual(expected);
  });

  it('fires 1W on Monday the 3rd when the 1st is a Saturday, and 31W on Friday the 29th when the 31st is a Sunday', () => {
    // 2022-10-01 is a Saturday; 2023-12-31 is a Sunday.
    expect(actual('0 0 0 1W 10 ? 2022', 'UTC', '2022-01-01T00:00:00Z', '2023-01-01T00:00:00Z')).toEqual([
      '2022-10-03T00:00:00.000Z',
    ]);
    expect(actual('0 0 0 31W 12 ? 2023', 'UTC', '2023-01-01T00:00:00Z', '2024-01-01T00:00:00Z')).toEqual([
      '2023-12-29T00:00:00.000Z',
    ]);
  });
});

// DST days as the day rules pick them: New York springs forward on its second Sunday of March
// and falls back on its first Sunday of November; London changes on the last Sunday of March
// and October. Wall times 01:30 (repeated at fall-back), 02:30 (in New York's gap) and every
// hour at :30 (the real clock).
const DST_DAY_FIELDS: readonly [dayOfMonth: string, month: string, dayOfWeek: string][] = [
  ['?', '3,11', '0#2'],
  ['?', '3,11', '0#1'],
  ['?', '3,10', '0L'],
  ['L', '3,10', '?'],
  ['L-2', '3,10', '?'], // 2026-03-29 and 2026-10-29 …
  ['8W', '3', '?'], // 2026-03-08 is a Sunday: Monday the 9th
  ['1W', '11', '?'], // 2026-11-01 is a Sunday: Monday the 2nd
  ['LW', '3,10', '?'],
  ['1', '11', '0L'],
  ['29', '3', '0#2'],
];

describe('Quartz day rules on DST days against the oracle, 2025-2027', () => {
  const cases = DST_DAY_FIELDS.flatMap(([dayOfMonth, month, dayOfWeek]) =>
    ['0 30 1', '0 30 2', '0 30 *'].flatMap((time) =>
      [NY, LONDON].map((zone) => [`${time} ${dayOfMonth} ${month} ${dayOfWeek}`, zone] as const),
    ),
  );
  it.each(cases)('%s in %s', (expression, zone) => {
    const expected = oracle(expression, zone, '2025-01-01T00:00:00Z', '2028-01-01T00:00:00Z');
    expect(expected.length).toBeGreaterThan(0);
    expect(actual(expression, zone, '2025-01-01T00:00:00Z', '2028-01-01T00:00:00Z')).toEqual(expected);
  });

  it('fires 02:30 on the spring-forward Sunday at 03:30 EDT and 01:30 on the fall-back Sunday once, at EDT', () => {
    expect(actual('0 30 2 ? 3 0#2 2026', NY, '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z')).toEqual([
      '2026-03-08T07:30:00.000Z',
    ]);
    expect(actual('0 30 1 ? 11 0#1 2026', NY, '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z')).toEqual([
      '2026-11-01T05:30:00.000Z',
    ]);
  });
});

const YEAR_CASES: readonly [expression: string, zone: string][] = [
  ['0 0 18 24 12 * 2026', 'UTC'],
  ['0 0 18 24 12 * 2026', NY],
  ['0 0 0 1 1 * 2024-2027', LONDON],
  ['0 0 0 29 2 * 2023-2029', 'UTC'], // leap days only: 2024, 2028
  ['0 0 0 L 2 * 2024,2025', NY],
  ['0 0 9 ? * 1#1 2027', NY],
  ['0 30 2 ? 3 0#2 2026-2027', NY],
  ['0 0 0 15W * ? 2025/2', LONDON],
  ['0 0 0 1 * ? */4', 'UTC'], // 1970, 1974, … 2022, 2026
  ['0 0 12 LW 6 ? 2023-2025,2028', 'UTC'],
];

describe('the year field against the oracle', () => {
  it.each(YEAR_CASES)('%s in %s, 2022-2029', (expression, zone) => {
    const expected = oracle(expression, zone, '2022-01-01T00:00:00Z', '2030-01-01T00:00:00Z');
    expect(expected.length).toBeGreaterThan(0);
    expect(actual(expression, zone, '2022-01-01T00:00:00Z', '2030-01-01T00:00:00Z')).toEqual(expected);
  });

  it('has no next occurrence once the last allowed year has passed', () => {
    const after = new Date('2027-01-01T00:00:00Z');
    expect(nextOccurrences('0 0 18 24 12 * 2026', { after, count: 3 })).toEqual([]);
    expect(nextOccurrences('0 0 0 L * * 2026', { after: new Date('2026-11-15T00:00:00Z'), count: 3 })).toEqual([
      new Date('2026-11-30T00:00:00Z'),
      new Date('2026-12-31T00:00:00Z'),
    ]);
  });

  it('finds an allowed year more than nine years ahead', () => {
    expect(nextOccurrences('0 0 0 1 1 * 2199', { after: new Date('2026-01-01T00:00:00Z'), count: 2 })).toEqual([
      new Date('2199-01-01T00:00:00Z'),
    ]);
  });
});
