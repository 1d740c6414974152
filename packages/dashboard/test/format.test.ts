import { describe, expect, it } from 'vitest';
import { describeCron, formatRun, nextRuns } from '../src/format.js';

describe('describeCron', () => {
  it.each([
    ['@every 1h30m', 'Every 1 hour 30 minutes'],
    ['@every 1m30s', 'Every 1 minute 30 seconds'],
    ['@every 1d', 'Every 1 day'],
    ['@every 2d1s500ms', 'Every 2 days 1 second 500 milliseconds'],
    ['0 0 0 L * *', 'At 12:00 AM, on the last day of the month'],
    ['0 0 0 * * 5#3', 'At 12:00 AM, on the third Friday of the month'],
    ['0 0 18 24 12 * 2026', 'At 06:00 PM, on day 24 of the month, only in December, only in 2026'],
  ])('describes %j as %j', (expression, words) => {
    expect(describeCron(expression)).toBe(words);
  });
});

describe('nextRuns', () => {
  it('counts an @every schedule from its startAt', () => {
    const startAt = new Date('2026-01-01T00:07:00Z');
    const schedule = { cronExpression: '@every 1h30m', timezone: 'UTC', dst: null, startAt };
    expect(nextRuns(schedule, startAt, 2)).toEqual([
      new Date('2026-01-01T01:37:00Z'),
      new Date('2026-01-01T03:07:00Z'),
    ]);
  });
});

describe('formatRun', () => {
  it('keeps the seconds, and names the UTC date when it differs from the zone date', () => {
    expect(formatRun(new Date('2026-11-27T07:30:00Z'), 'America/New_York')).toEqual({
      local: '2026-11-27 02:30:00',
      utc: '07:30:00 UTC',
    });
    expect(formatRun(new Date('2026-11-27T23:15:05Z'), 'Asia/Tokyo')).toEqual({
      local: '2026-11-28 08:15:05',
      utc: '11-27 23:15:05 UTC',
    });
  });
});
