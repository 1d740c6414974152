import { describe, expect, it } from 'vitest';
import { expectOneLineError, orreryInProcess, orreryInProcessJson } from './support/cli.js';

describe('orrery next', () => {
  it('prints fire times in UTC and on the wall clock, applying the DST gap rule', async () => {
    const run = await orreryInProcess([
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

  it('prints the same occurrences as JSON with --json', async () => {
    const output = await orreryInProcessJson<{
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

  it('defaults to ten fire times after now in UTC', async () => {
    const output = await orreryInProcessJson<{ timezone: string; occurrences: Array<{ utc: string; local: string }> }>([
      'next',
      '@hourly',
    ]);
    expect(output.timezone).toBe('UTC');
    expect(output.occurrences).toHaveLength(10);
    expect(output.occurrences[0]!.local.endsWith('+00:00')).toBe(true);
  });

  it('refuses an invalid expression with one line naming the field, exit code 1', async () => {
    expectOneLineError(await orreryInProcess(['next', '61 * * * *']), 1, 'minute');
  });

  it('refuses an unknown timezone with one line, exit code 1', async () => {
    expectOneLineError(await orreryInProcess(['next', '@daily', '--tz', 'Mars/Olympus']), 1, 'Mars/Olympus');
  });

  it('refuses a malformed count as a usage error, exit code 2', async () => {
    expectOneLineError(await orreryInProcess(['next', '@daily', '-n', 'ten']), 2, '--count');
  });

  it('refuses more than 10000 fire times as a usage error naming the bound and --after, exit code 2', async () => {
    const run = await orreryInProcess(['next', '* * * * * *', '-n', '100000000']);
    const line = expectOneLineError(run, 2, "'100000000' is invalid");
    expect(line).toContain('from 1 to 10000');
    expect(line).toContain('--after');
    expect(run.stdout).toBe('');
    for (const count of ['10001', '0'])
      expectOneLineError(await orreryInProcess(['next', '@daily', '-n', count]), 2, 'from 1 to 10000');
  });

  it('prints 10000 fire times, as JSON and as a table, the same document writeJson would print', async () => {
    const args = ['next', '* * * * * *', '-n', '10000', '--after', '2024-01-01T00:00:00Z'];
    const json = await orreryInProcess([...args, '--json']);
    expect(json.status).toBe(0);
    const parsed = JSON.parse(json.stdout) as { occurrences: Array<{ utc: string; local: string }> };
    expect(json.stdout).toBe(`${JSON.stringify(parsed, null, 2)}\n`);
    expect(parsed.occurrences).toHaveLength(10_000);
    expect(parsed.occurrences[0]).toEqual({ utc: '2024-01-01T00:00:01.000Z', local: '2024-01-01T00:00:01+00:00' });
    // 10,000 seconds after midnight is 02:46:40.
    expect(parsed.occurrences[9_999]).toEqual({ utc: '2024-01-01T02:46:40.000Z', local: '2024-01-01T02:46:40+00:00' });
    const table = await orreryInProcess(args);
    expect(table.status).toBe(0);
    const rows = table.stdout.split('\n').filter((line) => line.includes('Z │'));
    expect(rows).toHaveLength(10_000);
    expect(rows[9_999]).toBe('│ 2024-01-01T02:46:40.000Z │ 2024-01-01T02:46:40+00:00 │');
    expect(table.stdout.trimEnd().split('\n').at(-1)).toMatch(/^└─+┴─+┘$/);
  });
});
