import { InvalidCronExpressionError, isOrreryError } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { nextOccurrences, normalizeCronExpression, parseCronExpression } from '../src/index.js';

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
    ['* * * *', 'expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got 4'],
    ['* * * * * * *', 'expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got 7'],
    ['every day', 'expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got 2'],
    ['@reboot', 'unknown macro; use one of @yearly @annually @monthly @weekly @daily @midnight @hourly'],
    ['@minutely', 'unknown macro'],
    ['0 0 L * *', 'day-of-month field value L is not supported; L, W, #, ? and H are not cron syntax'],
    ['0 0 1W * *', 'day-of-month field value 1W is not supported'],
    ['0 0 * * 5L', 'day-of-week field value 5L is not supported'],
    ['0 0 * * 1#2', 'day-of-week field value 1#2 is not supported'],
    ['0 0 ? * 1', 'day-of-month field value ? is not supported'],
    ['H * * * *', 'minute field value H is not supported'],
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

  it('accepts February 30 when the day-of-week field can still match (day fields combine with OR)', () => {
    expect(nextOccurrences('0 0 30 2 MON', { after: new Date('2026-01-01T00:00:00Z'), count: 2 })).toEqual([
      new Date('2026-02-02T00:00:00Z'),
      new Date('2026-02-09T00:00:00Z'),
    ]);
  });
});
