import { describe, expect, it } from 'vitest';
import { expectOneLineError, orrery, orreryJson } from './support/cli.js';

describe('orrery next', () => {
  it('prints fire times in UTC and on the wall clock, applying the DST gap rule', () => {
    const run = orrery([
      'next',
      '30 2 * * *',
      '--tz',
      'America/New_York',
      '-n',
      '3',
      '--after',
      '2024-03-09T00:00:00Z',
    ]);
    expect(run.status).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain('Local (America/New_York)');
    const rows = run.stdout.split('\n').filter((line) => line.includes('Z │'));
    expect(rows).toHaveLength(3);
    // 02:30 does not exist on the spring-forward day: it fires at 03:30 EDT.
    expect(rows[1]).toContain('2024-03-10T07:30:00.000Z');
    expect(rows[1]).toContain('2024-03-10T03:30:00-04:00');
  });

  it('prints the same occurrences as JSON with --json', () => {
    const output = orreryJson<{
      expression: string;
      timezone: string;
      occurrences: Array<{ utc: string; local: string }>;
    }>(['next', '0 9 * * MON-FRI', '--tz', 'europe/london', '-n', '2', '--after', '2024-06-07T12:00:00Z']);
    expect(output).toEqual({
      expression: '0 9 * * MON-FRI',
      timezone: 'Europe/London',
      occurrences: [
        { utc: '2024-06-10T08:00:00.000Z', local: '2024-06-10T09:00:00+01:00' },
        { utc: '2024-06-11T08:00:00.000Z', local: '2024-06-11T09:00:00+01:00' },
      ],
    });
  });

  it('defaults to ten fire times after now in UTC', () => {
    const output = orreryJson<{ timezone: string; occurrences: Array<{ utc: string; local: string }> }>([
      'next',
      '@hourly',
    ]);
    expect(output.timezone).toBe('UTC');
    expect(output.occurrences).toHaveLength(10);
    expect(output.occurrences[0]!.local.endsWith('+00:00')).toBe(true);
  });

  it('refuses an invalid expression with one line naming the field, exit code 1', () => {
    expectOneLineError(orrery(['next', '61 * * * *']), 1, 'minute');
  });

  it('refuses an unknown timezone with one line, exit code 1', () => {
    expectOneLineError(orrery(['next', '@daily', '--tz', 'Mars/Olympus']), 1, 'Mars/Olympus');
  });

  it('refuses a malformed count as a usage error, exit code 2', () => {
    expectOneLineError(orrery(['next', '@daily', '-n', 'ten']), 2, '--count');
  });
});
