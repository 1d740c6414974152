import { InvalidCronExpressionError, InvalidTimezoneError, ValidationError } from '@orreryjs/core';
import { CronExpressionParser } from 'cron-parser';
import { describe, expect, it } from 'vitest';
import { nextOccurrences, occurrencesBetween } from '../../src/index.js';

function next(expression: string, timezone: string, after: string, count: number): string[] {
  return nextOccurrences(expression, { timezone, after: new Date(after), count }).map((date) => date.toISOString());
}

function iso(...instants: string[]): string[] {
  return instants.map((instant) => new Date(instant).toISOString());
}

const NY = 'America/New_York';
const LONDON = 'Europe/London';
const SYDNEY = 'Australia/Sydney';
const LORD_HOWE = 'Australia/Lord_Howe';
const KOLKATA = 'Asia/Kolkata';

/** A UTC instant in 2026 written `MM-DD HH:mm[:ss]`, so that a table row fits on one line. */
function in2026(shorthand: string): string {
  return new Date(`2026-${shorthand.replace(' ', 'T')}Z`).toISOString();
}

// Each row: expression, zone, `after`, then the UTC instants expected strictly after it.
// Comments give the local reading: EST -5, EDT -4; GMT 0, BST +1; AEST +10, AEDT +11;
// IST +5:30; Lord Howe +10:30 standard, +11 daylight.
describe('nextOccurrences with a fixed hour: gap times read with the offset before, repeats fire once', () => {
  it.each([
    // New York springs forward 2026-03-08 02:00 EST -> 03:00 EDT.
    ['30 2 * * *', NY, '03-07 00:00', '03-07 07:30, 03-08 07:30, 03-09 06:30'],
    ['0 2,3 * * *', NY, '03-08 00:00', '03-08 07:00, 03-09 06:00'], // 02:00 = 03:00 EDT: once
    ['0 1-3 * * *', NY, '03-08 05:00', '03-08 06:00, 03-08 07:00, 03-09 05:00'],
    ['*/20 2 * * *', NY, '03-08 05:00', '03-08 07:00, 03-08 07:20, 03-08 07:40'],
    ['0 9 * * MON-FRI', NY, '03-06 00:00', '03-06 14:00, 03-09 13:00'],
    ['30 0 2 * * *', NY, '03-08 00:00', '03-08 07:00:30, 03-09 06:00:30'],
    // New York falls back 2026-11-01 02:00 EDT -> 01:00 EST: 01:xx happens twice.
    ['30 1 * * *', NY, '10-31 00:00', '10-31 05:30, 11-01 05:30, 11-02 06:30'],
    ['*/20 1 * * *', NY, '11-01 04:00', '11-01 05:00, 11-01 05:20, 11-01 05:40, 11-02 06:00'],
    ['0 2,3 * * *', NY, '11-01 00:00', '11-01 07:00, 11-01 08:00'], // 02:00 EST: once
    ['15,45 30 1 * * *', NY, '11-01 00:00', '11-01 05:30:15, 11-01 05:30:45, 11-02 06:30:15'],
    // London: 2026-03-29 01:00 GMT -> 02:00 BST; 2026-10-25 02:00 BST -> 01:00 GMT.
    ['30 1 * * *', LONDON, '03-28 12:00', '03-29 01:30, 03-30 00:30'],
    ['30 1 * * *', LONDON, '10-24 12:00', '10-25 00:30, 10-26 01:30'],
    // Sydney falls back 2026-04-05 03:00 AEDT -> 02:00 AEST,
    // and springs forward 2026-10-04 02:00 AEST -> 03:00 AEDT.
    ['30 2 * * *', SYDNEY, '04-03 12:00', '04-03 15:30, 04-04 15:30, 04-05 16:30'],
    ['30 2 * * *', SYDNEY, '10-02 12:00', '10-02 16:30, 10-03 16:30, 10-04 15:30'],
    // Lord Howe falls back 2026-04-05 02:00 -> 01:30, springs forward 2026-10-04 02:00 -> 02:30.
    ['45 1 * * *', LORD_HOWE, '04-03 12:00', '04-03 14:45, 04-04 14:45, 04-05 15:15'],
    ['15 2 * * *', LORD_HOWE, '10-02 12:00', '10-02 15:45, 10-03 15:45, 10-04 15:15'],
    ['0,30 2 * * *', LORD_HOWE, '10-03 12:00', '10-03 15:30, 10-04 15:00'], // 02:00 = 02:30: once
    // Kolkata has no DST: plain +05:30 all year.
    ['30 2 * * *', KOLKATA, '03-08 00:00', '03-08 21:00, 03-09 21:00'],
    ['30 1 * * *', KOLKATA, '10-31 00:00', '10-31 20:00, 11-01 20:00'],
  ])('%s in %s after 2026-%s UTC', (expression, timezone, after, expected) => {
    const instants = expected.split(', ').map(in2026);
    expect(next(expression, timezone, in2026(after), instants.length)).toEqual(instants);
  });
});

describe('nextOccurrences with a `*` hour: the real clock, repeated hour again, missing hour never', () => {
  it.each([
    ['0 * * * *', NY, '03-08 04:30', '03-08 05:00, 03-08 06:00, 03-08 07:00, 03-08 08:00'],
    ['0 * * * *', NY, '11-01 04:30', '11-01 05:00, 11-01 06:00, 11-01 07:00, 11-01 08:00'],
    ['*/30 * * * *', NY, '03-08 06:15', '03-08 06:30, 03-08 07:00, 03-08 07:30'],
    ['*/30 * * * *', NY, '11-01 04:45', '11-01 05:00, 11-01 05:30, 11-01 06:00, 11-01 06:30, 11-01 07:00'],
    ['0 */2 * * *', NY, '03-08 04:30', '03-08 05:00, 03-08 08:00, 03-08 10:00'], // no 02:00
    ['0 */2 * * *', NY, '11-01 03:30', '11-01 04:00, 11-01 07:00, 11-01 09:00'],
    ['@hourly', NY, '11-01 04:30', '11-01 05:00, 11-01 06:00'],
    ['* * * * * *', NY, '11-01 05:59:58', '11-01 05:59:59, 11-01 06:00:00, 11-01 06:00:01'],
    ['* * * * * *', NY, '03-08 06:59:58', '03-08 06:59:59, 03-08 07:00:00, 03-08 07:00:01'],
    ['0 * * * *', LONDON, '03-29 00:00', '03-29 01:00, 03-29 02:00'],
    ['*/30 * * * *', LONDON, '10-24 23:45', '10-25 00:00, 10-25 00:30, 10-25 01:00, 10-25 01:30, 10-25 02:00'],
    ['0 * * * *', SYDNEY, '04-04 14:30', '04-04 15:00, 04-04 16:00, 04-04 17:00'],
    ['0 * * * *', SYDNEY, '10-03 14:30', '10-03 15:00, 10-03 16:00, 10-03 17:00'],
    ['*/15 * * * *', LORD_HOWE, '04-04 14:20', '04-04 14:30, 04-04 14:45, 04-04 15:00, 04-04 15:15, 04-04 15:30'],
    ['*/15 * * * *', LORD_HOWE, '10-03 15:00', '10-03 15:15, 10-03 15:30, 10-03 15:45'],
    ['0 * * * *', KOLKATA, '11-01 00:00', '11-01 00:30, 11-01 01:30'],
  ])('%s in %s after 2026-%s UTC', (expression, timezone, after, expected) => {
    const instants = expected.split(', ').map(in2026);
    expect(next(expression, timezone, in2026(after), instants.length)).toEqual(instants);
  });
});

describe('nextOccurrences on calendars', () => {
  it.each([
    ['@daily', NY, '2026-03-07T12:00Z', ['2026-03-08T05:00Z', '2026-03-09T04:00Z']],
    ['@midnight', 'UTC', '2026-01-01T00:00Z', ['2026-01-02T00:00Z']],
    ['@weekly', 'UTC', '2026-01-01T00:00Z', ['2026-01-04T00:00Z', '2026-01-11T00:00Z']], // 2026-01-01 is a Thursday
    ['@monthly', 'UTC', '2026-01-01T00:00Z', ['2026-02-01T00:00Z', '2026-03-01T00:00Z']],
    ['@yearly', LONDON, '2026-01-01T00:00Z', ['2027-01-01T00:00Z']],
    ['@annually', KOLKATA, '2026-01-01T00:00Z', ['2026-12-31T18:30Z']],
    ['0 12 * jan,JUL Mon', 'UTC', '2026-01-01T00:00Z', ['2026-01-05T12:00Z', '2026-01-12T12:00Z']],
    ['0 12 * JAN,jul mon', 'UTC', '2026-01-31T00:00Z', ['2026-07-06T12:00Z']],
    ['0 0 * * 7', 'UTC', '2026-01-01T00:00Z', ['2026-01-04T00:00Z']],
    // Both day fields restricted: Fridays OR the 13th (a Tuesday in January 2026).
    [
      '0 0 13 * FRI',
      'UTC',
      '2026-01-01T00:00Z',
      ['2026-01-02T00:00Z', '2026-01-09T00:00Z', '2026-01-13T00:00Z', '2026-01-16T00:00Z'],
    ],
    ['0 0 13 * *', 'UTC', '2026-01-01T00:00Z', ['2026-01-13T00:00Z', '2026-02-13T00:00Z']],
    ['0 0 * * FRI', 'UTC', '2026-01-01T00:00Z', ['2026-01-02T00:00Z', '2026-01-09T00:00Z']],
    ['0 0 1 * 0-6', 'UTC', '2026-01-01T00:00Z', ['2026-01-02T00:00Z', '2026-01-03T00:00Z']],
    ['0 0 31 * *', 'UTC', '2026-01-31T00:00Z', ['2026-03-31T00:00Z', '2026-05-31T00:00Z']],
    // February 29 skips 2100, which is not a leap year.
    ['0 0 29 2 *', 'UTC', '2096-03-01T00:00Z', ['2104-02-29T00:00Z', '2108-02-29T00:00Z']],
  ])('%s in %s after %s', (expression, timezone, after, expected) => {
    expect(next(expression, timezone, after, expected.length)).toEqual(iso(...expected));
  });

  it.each([
    '0 0 13 * FRI',
    '*/7 3-5 1,15 * MON',
    '0 0 */3 * SUN',
    '15 10 * JAN,jun *',
    '0 9 * * MON-FRI',
    '*/10 * * * * *',
    '0 0 29 2 *',
  ])('agrees with cron-parser in UTC for %j', (expression) => {
    const after = new Date('2026-01-01T00:00:00Z');
    const theirs = CronExpressionParser.parse(expression, { tz: 'UTC', currentDate: after })
      .take(40)
      .map((date) => date.toDate());
    expect(nextOccurrences(expression, { after, count: 40 })).toEqual(theirs);
  });

  it('returns occurrences strictly after `after`, ignoring its milliseconds', () => {
    expect(next('*/10 * * * * *', 'UTC', '2026-01-01T00:00:10.000Z', 1)).toEqual(iso('2026-01-01T00:00:20Z'));
    expect(next('*/10 * * * * *', 'UTC', '2026-01-01T00:00:09.999Z', 1)).toEqual(iso('2026-01-01T00:00:10Z'));
  });

  it('returns one occurrence after now by default', () => {
    const before = Date.now();
    const [first, ...rest] = nextOccurrences('* * * * * *');
    expect(rest).toEqual([]);
    expect(first!.getTime()).toBeGreaterThan(before);
    expect(first!.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    expect(first!.getUTCMilliseconds()).toBe(0);
  });

  it('returns nothing for count 0 and refuses a negative or fractional count', () => {
    expect(next('* * * * *', 'UTC', '2026-01-01T00:00Z', 0)).toEqual([]);
    expect(() => nextOccurrences('* * * * *', { count: -1 })).toThrow(ValidationError);
    expect(() => nextOccurrences('* * * * *', { count: 1.5 })).toThrow('count must be a non-negative integer, got 1.5');
  });
});

describe('occurrencesBetween', () => {
  const range = { start: new Date('2026-01-01T00:00:00Z'), end: new Date('2026-01-01T03:00:00Z') };

  it('includes the start and excludes the end', () => {
    expect(occurrencesBetween('0 * * * *', range)).toEqual([
      new Date('2026-01-01T00:00:00Z'),
      new Date('2026-01-01T01:00:00Z'),
      new Date('2026-01-01T02:00:00Z'),
    ]);
  });

  it('returns the earliest `limit` occurrences when there are more', () => {
    expect(occurrencesBetween('*/15 * * * *', { ...range, limit: 2 })).toEqual([
      new Date('2026-01-01T00:00:00Z'),
      new Date('2026-01-01T00:15:00Z'),
    ]);
    expect(occurrencesBetween('*/15 * * * *', { ...range, limit: 0 })).toEqual([]);
    expect(() => occurrencesBetween('*/15 * * * *', { ...range, limit: -2 })).toThrow(
      'limit must be a non-negative integer, got -2',
    );
  });

  it('is empty when the range is empty or reversed', () => {
    expect(occurrencesBetween('* * * * *', { start: range.start, end: range.start })).toEqual([]);
    expect(occurrencesBetween('* * * * *', { start: range.end, end: range.start })).toEqual([]);
  });

  it('follows the DST rules across a fall-back night', () => {
    const night = { start: new Date('2026-11-01T04:00:00Z'), end: new Date('2026-11-01T08:00:00Z') };
    expect(occurrencesBetween('0 * * * *', { ...night, timezone: 'America/New_York' })).toEqual(
      ['04:00', '05:00', '06:00', '07:00'].map((time) => new Date(`2026-11-01T${time}:00Z`)),
    );
    expect(occurrencesBetween('0 1 * * *', { ...night, timezone: 'America/New_York' })).toEqual([
      new Date('2026-11-01T05:00:00Z'),
    ]);
  });

  it('refuses invalid dates', () => {
    expect(() => occurrencesBetween('* * * * *', { start: new Date(Number.NaN), end: range.end })).toThrow(
      'start must be a valid Date, got Invalid Date',
    );
  });
});

describe('errors', () => {
  it('names the expression and the field', () => {
    const attempt = () => nextOccurrences('61 * * * *', { after: new Date(0) });
    expect(attempt).toThrow(InvalidCronExpressionError);
    expect(attempt).toThrow('Invalid cron expression "61 * * * *": minute field value 61 is out of range 0-59');
  });

  it.each(['Mars/Olympus', '', '+05:00', 'New York'])('refuses the zone %j, suggesting an IANA name', (timezone) => {
    const attempt = () => occurrencesBetween('* * * * *', { timezone, start: new Date(0), end: new Date(1) });
    expect(attempt).toThrow(InvalidTimezoneError);
    expect(attempt).toThrow(
      `Invalid timezone "${timezone}": not an IANA time zone name; use a name such as 'Europe/London'`,
    );
  });

  it.each([
    [{ repeated: 'second' }, "dst.repeated must be one of 'first', 'last', 'both'"],
    [{ gap: 'forward' }, "dst.gap must be one of 'shift', 'skip'"],
    [{ fold: 'first' }, 'Unknown dst field "fold"'],
  ])('refuses the dst %j', (dst, message) => {
    const attempt = () => nextOccurrences('30 1 * * *', { after: new Date(0), dst: dst as never });
    expect(attempt).toThrow(ValidationError);
    expect(attempt).toThrow(message);
  });
});
