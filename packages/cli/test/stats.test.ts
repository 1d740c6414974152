import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectOneLineError, orreryInProcess, orreryInProcessJson } from './support/cli.js';
import { migratedSqliteDatabase, registerFixtureWorkflows } from './support/database.js';

const database = migratedSqliteDatabase();
beforeAll(() => registerFixtureWorkflows(database.url));
afterAll(() => database.remove());
const env = { ORRERY_DATABASE_URL: database.url };

interface Stats {
  since: string | null;
  cron: { totalExecutions: number; successfulExecutions: number; successRate: number | null; lostExecutions: number };
  recovery: { totalRecoveryAttempts: number; recoverySuccessRate: number | null };
}

describe('orrery stats', () => {
  it('reports zeros on an empty database, and rates with no attempts as null and —, not 0 %', async () => {
    const stats = await orreryInProcessJson<Stats>(['stats'], { env });
    expect(stats.since).toBeNull();
    expect(stats.cron).toMatchObject({ totalExecutions: 0, successfulExecutions: 0, successRate: null });
    expect(stats.recovery).toMatchObject({ totalRecoveryAttempts: 0, recoverySuccessRate: null });
    const table = await orreryInProcess(['stats'], { env });
    expect(table.status).toBe(0);
    expect(table.stdout.match(/Success rate\s+│ — │/g)).toHaveLength(2);
    expect(table.stdout).not.toContain('0.0%');
  });

  it('counts handed-off occurrences in a table and as JSON', async () => {
    // Three hourly slots a day ago: within the ledger retention, which backfills must respect.
    const start = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 24 * 3_600_000);
    const end = new Date(start.getTime() + 3 * 3_600_000);
    await orreryInProcessJson(['schedules', 'add', 'ping', '0 * * * *', '--name', 'hourly'], { env });
    await orreryInProcessJson(
      ['schedules', 'backfill', 'hourly', '--start', start.toISOString(), '--end', end.toISOString()],
      {
        env,
      },
    );
    await orreryInProcessJson(['schedules', 'trigger', 'hourly'], { env });

    const stats = await orreryInProcessJson<Stats>(['stats', '--since', '2000-01-01T00:00:00Z'], { env });
    expect(stats.since).toBe('2000-01-01T00:00:00.000Z');
    expect(stats.cron).toMatchObject({
      totalExecutions: 4,
      successfulExecutions: 4,
      lostExecutions: 0,
      successRate: 100,
    });

    const table = await orreryInProcess(['stats', '--since', '2000-01-01T00:00:00Z'], { env });
    expect(table.status).toBe(0);
    expect(table.stdout).toContain('Cron occurrences since 2000-01-01T00:00:00.000Z:');
    expect(table.stdout).toMatch(/Handed off\s+│ 4/);
    expect(table.stdout).toMatch(/Success rate\s+│ 100\.0%/);
    // No recovery attempt was made: its rate is unknown, not 0 %.
    expect(table.stdout).toMatch(/Recovery:[\s\S]*Success rate\s+│ — │/);
    expect(stats.recovery).toMatchObject({ totalRecoveryAttempts: 0, recoverySuccessRate: null });
  });

  it('accepts a duration for --since', async () => {
    const stats = await orreryInProcessJson<Stats>(['stats', '--since', '7d'], { env });
    expect(Date.parse(stats.since!)).toBeLessThan(Date.now());
  });

  it('refuses a --since more than 100 years back as a usage error, and takes 100 years', async () => {
    expectOneLineError(await orreryInProcess(['stats', '--since', '99999999999d'], { env }), 2, 'at most 100 years');
    const stats = await orreryInProcessJson<Stats>(['stats', '--since', '36500d'], { env });
    expect(new Date(stats.since!).getUTCFullYear()).toBe(new Date().getUTCFullYear() - 100);
  });

  it('refuses a --since that is neither an instant nor a duration', async () => {
    expectOneLineError(await orreryInProcess(['stats', '--since', 'last week'], { env }), 2, 'duration');
  });
});
