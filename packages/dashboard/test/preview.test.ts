import type { DefaultRunner } from '@orreryjs/runner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboard, type Dashboard } from '../src/index.js';
import { BACKENDS, createRunner } from './support.js';

// biome-ignore lint/suspicious/noExplicitAny: the API's JSON bodies, read field by field
type Loose = any;

const ORIGIN = 'http://dashboard.test';

async function preview(dashboard: Dashboard, query: Record<string, string>, base = '/') {
  const url = `${ORIGIN}${base}api/preview?${new URLSearchParams(query).toString()}`;
  const response = await dashboard.fetch(new Request(url));
  return { status: response.status, body: (await response.json()) as Loose };
}

describe('dashboard preview of an expression being typed', () => {
  const db = BACKENDS[0]!.open();
  let runner: DefaultRunner;
  let dashboard: Dashboard;

  beforeAll(async () => {
    // The preview reads nothing stored: a runner that never starts is enough.
    runner = await createRunner(db.config);
    dashboard = createDashboard({ client: runner });
  });

  afterAll(async () => {
    await runner?.shutdown();
    await db.remove();
  });

  it('answers the next 5 runs of a 5-field expression in its zone and in UTC, with the words', async () => {
    const before = Date.now();
    const { status, body } = await preview(dashboard, { expression: '30 2 * * *', timezone: 'America/New_York' });
    expect(status).toBe(200);
    expect(body.description).toBe('At 02:30 AM');
    expect(body.timezone).toBe('America/New_York');
    const runs = (body.nextRuns as string[]).map((at) => new Date(at).getTime());
    expect(runs).toHaveLength(5);
    expect(runs[0]).toBeGreaterThan(before);
    expect([...runs].sort((a, b) => a - b)).toEqual(runs);
    for (const shown of body.shown as { local: string; utc: string }[]) {
      expect(shown.local).toMatch(/^\d{4}-\d\d-\d\d 02:30:00$/);
      expect(shown.utc).toMatch(/^0[67]:30:00 UTC$/);
    }
  });

  it('counts an @every interval from the form startAt', async () => {
    const { status, body } = await preview(dashboard, { expression: '@every 90m', startAt: '2026-01-01T00:07:00' });
    expect(status).toBe(200);
    expect(body.description).toBe('Every 90 minutes');
    const runs = (body.nextRuns as string[]).map((at) => new Date(at).getTime());
    expect(runs).toHaveLength(5);
    expect(runs.slice(1).map((at, i) => at - runs[i]!)).toEqual([5_400_000, 5_400_000, 5_400_000, 5_400_000]);
    expect((runs[0]! - Date.parse('2026-01-01T00:07:00Z')) % 5_400_000).toBe(0);
  });

  it('reads a 7-field expression (seconds first, year last) and answers no run for a year gone by', async () => {
    const future = await preview(dashboard, { expression: '15 0 12 * * ? 2099', timezone: 'Europe/Paris' });
    expect(future.status).toBe(200);
    expect(future.body.shown.map((run: Loose) => run.local)).toEqual([
      '2099-01-01 12:00:15',
      '2099-01-02 12:00:15',
      '2099-01-03 12:00:15',
      '2099-01-04 12:00:15',
      '2099-01-05 12:00:15',
    ]);
    expect(future.body.shown[0].utc).toBe('11:00:15 UTC');
    const past = await preview(dashboard, { expression: '0 0 12 1 1 ? 2020' });
    expect(past.status).toBe(200);
    expect(past.body.nextRuns).toEqual([]);
  });

  it('applies the form DST rules, as saving would', async () => {
    // 2027-11-07 01:30 happens twice in New York (EDT, then EST): `both` fires at each.
    const query = { expression: '0 30 1 7 11 ? 2027', timezone: 'America/New_York', startAt: '' };
    const first = await preview(dashboard, { ...query, 'dst.repeated': 'first' });
    const both = await preview(dashboard, { ...query, 'dst.repeated': 'both' });
    expect(first.body.shown).toEqual([{ local: '2027-11-07 01:30:00', utc: '05:30:00 UTC' }]);
    expect(both.body.shown).toEqual([
      { local: '2027-11-07 01:30:00', utc: '05:30:00 UTC' },
      { local: '2027-11-07 01:30:00', utc: '06:30:00 UTC' },
    ]);
    const unknown = await preview(dashboard, { ...query, 'dst.gap': 'sometimes' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('VALIDATION');
  });

  it('answers 400 with the engine code and message for a bad expression, zone or missing expression', async () => {
    const bad = await preview(dashboard, { expression: '61 * * * *' });
    expect(bad).toEqual({
      status: 400,
      body: {
        error: {
          code: 'INVALID_CRON_EXPRESSION',
          message: 'Invalid cron expression "61 * * * *": minute field value 61 is out of range 0-59',
        },
      },
    });
    const zone = await preview(dashboard, { expression: '* * * * *', timezone: 'Mars/Olympus_Mons' });
    expect(zone.status).toBe(400);
    expect(zone.body.error.code).toBe('INVALID_TIMEZONE');
    expect(zone.body.error.message).toContain('Mars/Olympus_Mons');
    const missing = await preview(dashboard, { expression: ' ' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toContain('expression is required');
  });

  it('answers in read-only mode and under a base path, since it writes nothing', async () => {
    const readOnly = createDashboard({ client: runner, readOnly: true, basePath: '/ops' });
    const { status, body } = await preview(readOnly, { expression: '*/5 * * * *' }, '/ops/');
    expect(status).toBe(200);
    expect(body.nextRuns).toHaveLength(5);
  });
});
