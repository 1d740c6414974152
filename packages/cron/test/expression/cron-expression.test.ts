import { InvalidCronExpressionError, isOrreryError } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { parseExpressionFields } from '../../src/expression/cron-expression.js';
import { nextOccurrences, normalizeCronExpression, parseCronExpression } from '../../src/index.js';

describe('normalizeCronExpression', () => {
  it.each([
    ['@daily', '0 0 0 * * *'],
    ['@midnight', '0 0 0 * * *'],
    ['@DAILY', '0 0 0 * * *'],
    ['0 0 * * *', '0 0 0 * * *'],
    ['0 0 0 * * *', '0 0 0 * * *'],
    ['  00   00 * *  * ', '0 0 0 * * *'],
    ['@hourly', '0 0 * * * *'],
    ['0 * * * *', '0 0 * * * *'],
    ['@yearly', '0 0 0 1 1 *'],
    ['@annually', '0 0 0 1 1 *'],
    ['0 0 1 jan *', '0 0 0 1 1 *'],
    ['@monthly', '0 0 0 1 * *'],
    ['@weekly', '0 0 0 * * 0'],
    ['0 0 * * SUN', '0 0 0 * * 0'],
    ['0 0 * * 7', '0 0 0 * * 0'],
    ['0 9 * * MON-FRI', '0 0 9 * * 1-5'],
    ['0 9 * * mon-fri', '0 0 9 * * 1-5'],
    ['0 9 * * 1,2,3,4,5', '0 0 9 * * 1-5'],
    ['0 0 * jan,FEB,Mar,dec *', '0 0 0 * 1-3,12 *'],
    ['*/15 * * * *', '0 */15 * * * *'],
    ['0,15,30,45 * * * *', '0 */15 * * * *'],
    ['5/15 * * * *', '0 5,20,35,50 * * * *'],
    ['10-20/5 * * * *', '0 10,15,20 * * * *'],
    ['0 */2 * * *', '0 0 */2 * * *'],
    ['0 */24 * * *', '0 0 */24 * * *'],
    ['0 0-22/2 * * *', '0 0 0,2,4,6,8,10,12,14,16,18,20,22 * * *'],
    ['0 0-23 * * *', '0 0 0-23 * * *'],
    ['0 0 1,15 * *', '0 0 0 1,15 * *'],
    ['0 0 */2 * *', '0 0 0 */2 * *'],
    ['0 0 13 * FRI', '0 0 0 13 * 5'],
    ['0 0 1 * 0-6', '0 0 0 * * *'],
    ['0 0 1-31 * MON', '0 0 0 * * *'],
    ['*/20 * * * * *', '*/20 * * * * *'],
    ['30 0 2 * * *', '30 0 2 * * *'],
    // A year is kept only when it restricts.
    ['0 0 18 24 12 * 2026', '0 0 18 24 12 * 2026'],
    ['0 0 0 * * * *', '0 0 0 * * *'],
    ['0 0 0 * * * 1970-2199', '0 0 0 * * *'],
    ['0 0 0 1 1 * 2030,2026,2027,2028', '0 0 0 1 1 * 2026-2028,2030'],
    ['0 0 0 1 1 * */10', '0 0 0 1 1 * */10'],
    ['0 0 0 1 1 * 2026/50', '0 0 0 1 1 * 2026,2076,2126,2176'],
    ['@yearly', '0 0 0 1 1 *'],
    // Quartz day rules: `?` is `*`, names become numbers, a fixed order.
    ['0 0 L * ?', '0 0 0 L * *'],
    ['0 0 ? * 5#3', '0 0 0 * * 5#3'],
    ['0 0 ? * mon#1', '0 0 0 * * 1#1'],
    ['0 0 * * FRIL', '0 0 0 * * 5L'],
    ['0 0 * * 7L', '0 0 0 * * 0L'],
    ['0 0 lw * *', '0 0 0 LW * *'],
    ['0 0 LW,L,L-3,15W,1,2,3 * *', '0 0 0 1-3,15W,L-3,L,LW * *'],
    ['0 0 L * 5L', '0 0 0 L * 5L'],
    ['0 0 1-31,L * *', '0 0 0 * * *'],
    ['0 0 */2,L * *', '0 0 0 1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,L * *'],
    ['0 0 * * 5L,1#2,0#1', '0 0 0 * * 0#1,1#2,5L'],
    ['0 0 0 L 2 * 2028', '0 0 0 L 2 * 2028'],
    // Intervals: the duration in the largest units.
    ['@every 90s', '@every 1m30s'],
    ['@every 90m', '@every 1h30m'],
    ['@EVERY 1h30m', '@every 1h30m'],
    ['@every 1h0m', '@every 1h'],
    ['@every 1500ms', '@every 1s500ms'],
    ['@every 366d', '@every 366d'],
    ['@every 1d24h', '@every 2d'],
  ])('normalises %j to %j', (expression, normalized) => {
    expect(normalizeCronExpression(expression)).toBe(normalized);
    expect(normalizeCronExpression(normalized)).toBe(normalized);
  });

  it('keeps a `*` hour apart from the same hours written out, because DST treats them differently', () => {
    expect(normalizeCronExpression('0 * * * *')).not.toBe(normalizeCronExpression('0 0-23 * * *'));
    expect(normalizeCronExpression('0 */2 * * *')).not.toBe(normalizeCronExpression('0 0-22/2 * * *'));
  });

  it.each([
    '0 9 * * MON-FRI',
    '*/15 * * * *',
    '0 0-22/2 * * *',
    '0 0 13 * FRI',
    '0 0 1 * 0-6',
    '0 0 */2 * *',
    '0 0 * * */2',
    '30 1 * * *',
    '0 2,3 * * *',
    '*/20 0-3 * * * ',
  ])('normalises %j to an expression with the same occurrences across DST changes', (expression) => {
    for (const [timezone, after] of [
      ['America/New_York', '2026-03-07T00:00:00Z'],
      ['America/New_York', '2026-10-31T00:00:00Z'],
      ['Australia/Lord_Howe', '2026-04-03T00:00:00Z'],
    ] as const) {
      const options = { timezone, after: new Date(after), count: 60 };
      expect(nextOccurrences(normalizeCronExpression(expression), options)).toEqual(
        nextOccurrences(expression, options),
      );
    }
  });
});

describe('parseCronExpression', () => {
  it('reports the written form, the canonical text and the canonical zone', () => {
    const parsed = parseCronExpression('@daily', 'europe/london');
    expect(parsed).toMatchObject({
      expression: '@daily',
      normalized: '0 0 0 * * *',
      hasSeconds: false,
      timezone: 'Europe/London',
    });
    expect(parseCronExpression('0 0 * * *').hasSeconds).toBe(false);
    expect(parseCronExpression('0 0 0 * * *').hasSeconds).toBe(true);
    expect(parseCronExpression('0 0 * * *').timezone).toBe('UTC');
  });

  it('walks occurrences with next() without reparsing', () => {
    const parsed = parseCronExpression('0 9 * * MON-FRI', 'UTC');
    const first = parsed.next(new Date('2026-01-02T09:00:00Z'));
    expect(first).toEqual(new Date('2026-01-05T09:00:00Z'));
    expect(parsed.next(first!)).toEqual(new Date('2026-01-06T09:00:00Z'));
  });

  it('refuses an invalid Date passed to next()', () => {
    const parsed = parseCronExpression('0 9 * * *');
    expect(() => parsed.next(new Date('nope'))).toThrow('after must be a valid Date, got Invalid Date');
  });
});

describe('invalid expressions', () => {
  it.each([
    ['61 * * * *', 'minute field value 61 is out of range 0-59'],
    ['60 * * * * *', 'second field value 60 is out of range 0-59'],
    ['* 24 * * *', 'hour field value 24 is out of range 0-23'],
    ['* * 0 * *', 'day-of-month field value 0 is out of range 1-31'],
    ['* * 32 * *', 'day-of-month field value 32 is out of range 1-31'],
    ['* * * 13 *', 'month field value 13 is out of range 1-12'],
    ['* * * * 8', 'day-of-week field value 8 is out of range 0-7'],
    ['1-70 * * * *', 'minute field value 70 is out of range 0-59'],
    ['', 'the expression is empty'],
    ['   ', 'the expression is empty'],
    [
      '* * * *',
      'expected 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or 7 with seconds first and a year last, got 4',
    ],
    [
      '* * * * * * * *',
      'expected 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or 7 with seconds first and a year last, got 8',
    ],
    [
      'every day',
      'expected 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or 7 with seconds first and a year last, got 2',
    ],
    [
      '@reboot',
      'unknown macro; use one of @yearly @annually @monthly @weekly @daily @midnight @hourly or @every <duration>',
    ],
    ['@minutely', 'unknown macro'],
    [
      'H * * * *',
      'minute field value H is not supported: H (a hash of the job name) is Jenkins syntax; write the value itself',
    ],
    ['0 H/2 * * *', 'hour field value H is not supported: H (a hash of the job name) is Jenkins syntax'],
    ['0 0 H * *', 'day-of-month field value H is not supported: H (a hash of the job name) is Jenkins syntax'],
    ['0 0 0 * * * 1969', 'year field value 1969 is out of range 1970-2199'],
    ['0 0 0 * * * 2200', 'year field value 2200 is out of range 1970-2199'],
    ['0 0 0 * * * 2026-2200', 'year field value 2200 is out of range 1970-2199'],
    ['0 0 0 * * * 2030-2026', 'year field range 2030-2026 runs backwards'],
    ['0 0 0 * * * 2026,2026', 'year field lists 2026 more than once'],
    ['0 0 0 * * * ?', 'year field value ? is not supported here: ? L W and # are Quartz day rules'],
    ['0 0 0 * * * 20x6', 'year field value 20x6 is not a number 1970-2199'],
    [
      '? * * * *',
      'minute field value ? is not supported here: ? L W and # are Quartz day rules, only for day-of-month',
    ],
    ['0 0 * L *', 'month field value L is not supported here'],
    ['0 0 L-0 * *', 'day-of-month field "L-0": L-0 needs an offset of 1-30 days before the last day'],
    ['0 0 L-31 * *', 'day-of-month field "L-31": L-31 needs an offset of 1-30 days'],
    ['0 0 32W * *', 'day-of-month field "32W": 32W needs a day of month 1-31 before W'],
    [
      '0 0 1-5W * *',
      'day-of-month field "1-5W": 1-5W is not a Quartz day-of-month rule; write L, L-n (n 1-30), nW or LW',
    ],
    ['0 0 L/2 * *', 'day-of-month field "L/2": L/2 is not a Quartz day-of-month rule'],
    ['0 0 L,L * *', 'field "L,L" lists the same Quartz day rule more than once'],
    ['0 0 ?,1 * *', 'day-of-month field value ? is not supported here'],
    ['0 0 * * 5#6', 'day-of-week field "5#6": 5#6 needs an occurrence of 1-5 after # (5#3: the third Friday)'],
    ['0 0 * * 5#0', 'day-of-week field "5#0": 5#0 needs an occurrence of 1-5'],
    ['0 0 * * 5#', 'day-of-week field "5#": 5# needs an occurrence of 1-5'],
    ['0 0 * * 8#1', 'day-of-week field value 8 is out of range 0-7'],
    ['0 0 * * 1-5#2', 'day-of-week field value 1-5 is not a number 0-7 or a name SUN-SAT'],
    [
      '0 0 * * L',
      'day-of-week field "L": L alone is ambiguous in day-of-week; write 6 for Saturday, or 5L for the last Friday',
    ],
    ['0 0 * * 9L', 'day-of-week field value 9 is out of range 0-7'],
    ['0 0 * * 5#3,FRI#3', 'field "5#3,FRI#3" lists the same Quartz day rule more than once'],
    ['@every', '@every needs a duration; write @every followed by a duration such as 90s, 5m or 1h30m'],
    ['@every 500ms', 'the interval 500ms is outside 1s-366d; use an interval of at least 1s and at most 366d'],
    ['@every 400d', 'the interval 400d is outside 1s-366d'],
    ['@every 366d1s', 'the interval 366d1s is outside 1s-366d'],
    ['@every 0s', 'the interval 0s is outside 1s-366d'],
    [
      '@every 5',
      'the duration "5" is malformed; write @every followed by a duration such as 90s, 5m or 1h30m (units d, h, m, s, ms, largest first)',
    ],
    ['@every 1.5h', 'the duration "1.5h" is malformed'],
    ['@every 1h 30m', 'the duration "1h 30m" is malformed'],
    ['@every 5M', 'the duration "5M" is malformed'],
    ['@every -5m', 'the duration "-5m" is malformed'],
    ['@every 5w', 'the duration "5w" is malformed'],
    ['@every 30m1h', 'the duration "30m1h" repeats or misorders its units'],
    ['@every 1m1m', 'the duration "1m1m" repeats or misorders its units'],
    ['*/0 * * * *', 'minute field step "0" must be a whole number of at least 1'],
    ['0-10/x * * * *', 'minute field step "x" must be a whole number of at least 1'],
    ['*/90 * * * *', "minute field step 90 is longer than the field's 60 values 0-59"],
    ['0 */30 * * *', "hour field step 30 is longer than the field's 24 values 0-23"],
    ['0 0 * * */8', "day-of-week field step 8 is longer than the field's 7 values 0-6"],
    ['0 0 1/32 * *', "day-of-month field step 32 is longer than the field's 31 values 1-31"],
    ['5-2 * * * *', 'minute field range 5-2 runs backwards; its start must come first'],
    ['0 0 * * FRI-MON', 'day-of-week field range FRI-MON runs backwards'],
    ['1,,2 * * * *', 'minute field "1,,2" is malformed'],
    ['1- * * * *', 'minute field "1-" is malformed'],
    ['*,5 * * * *', `minute field "*,5": '*' must stand alone`],
    ['MON * * * *', 'minute field value MON is not a number 0-59'],
    ['0 0 * * MONDAY', 'day-of-week field value MONDAY is not a number 0-7 or a name SUN-SAT'],
    ['0 0 * JANUARY *', 'month field value JANUARY is not a number 1-12 or a name JAN-DEC'],
    ['0 0 30 2 *', 'day-of-month field 30 never occurs in month field 2'],
    ['0 0 31 4,6 *', 'day-of-month field 31 never occurs in month field 4,6'],
    ['1,2,1 * * * *', 'minute field lists 1 more than once'],
    ['0 0 * * 0,7', 'day-of-week field lists 0 more than once (0 and 7 are both Sunday)'],
  ])('refuses %j: %s', (expression, reason) => {
    const attempt = () => normalizeCronExpression(expression);
    expect(attempt).toThrow(InvalidCronExpressionError);
    expect(attempt).toThrow(`Invalid cron expression "${expression}": ${reason}`);
  });

  it('throws an error that carries the stable code', () => {
    try {
      parseCronExpression('61 * * * *');
      expect.unreachable();
    } catch (error) {
      expect(isOrreryError(error, 'INVALID_CRON_EXPRESSION')).toBe(true);
    }
  });

  it('accepts February 30 when a Quartz day-of-week item can still match', () => {
    expect(nextOccurrences('0 0 30 2 5L', { after: new Date('2026-01-01T00:00:00Z'), count: 2 })).toEqual([
      new Date('2026-02-27T00:00:00Z'),
      new Date('2027-02-26T00:00:00Z'),
    ]);
  });

  it('accepts February 30 when the day-of-week field can still match (day fields combine with OR)', () => {
    expect(nextOccurrences('0 0 30 2 MON', { after: new Date('2026-01-01T00:00:00Z'), count: 2 })).toEqual([
      new Date('2026-02-02T00:00:00Z'),
      new Date('2026-02-09T00:00:00Z'),
    ]);
  });
});

describe('parseExpressionFields memoisation', () => {
  it('parses each text once: the same frozen result for the same text, so a sync of many schedules reuses it', () => {
    const first = parseExpressionFields('0 0 L,15W * *');
    expect(parseExpressionFields('0 0 L,15W * *')).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(first.kind === 'calendar' && Object.isFrozen(first.daysOfMonth)).toBe(true);
    expect(first.kind === 'calendar' && Object.isFrozen(first.quartz.nearestWeekdays)).toBe(true);
    expect(parseExpressionFields('@every 90m')).toBe(parseExpressionFields('@every 90m'));
    expect(parseExpressionFields('0 0 L,15W * *')).not.toBe(parseExpressionFields('0 0 L * *'));
  });

  it('keeps no error: each call throws a fresh one, whose message a caller may prefix', () => {
    const thrown = () => {
      try {
        parseExpressionFields('0 0 L-31 * *');
      } catch (error) {
        return error as Error;
      }
      throw new Error('expected a refusal');
    };
    const first = thrown();
    first.message = `schedules[3]: ${first.message}`;
    const second = thrown();
    expect(second).not.toBe(first);
    expect(second).toBeInstanceOf(InvalidCronExpressionError);
    expect(second.message).toMatch(/^Invalid cron expression "0 0 L-31 \* \*": /);
  });
});
