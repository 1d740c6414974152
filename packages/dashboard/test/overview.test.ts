import { type DefaultRunner, defineWorkflow, ManualClock } from '@orreryjs/runner';
import { afterEach, describe, expect, it } from 'vitest';
import { createDashboard } from '../src/index.js';
import { BACKENDS, createRunner } from './support.js';

const ORIGIN = 'http://dashboard.test';
const orphan = defineWorkflow({ name: 'orphan', tasks: [{ id: 'only', run: () => {} }] });

describe.each(BACKENDS)('dashboard overview on $name', (backend) => {
  let db: ReturnType<(typeof BACKENDS)[number]['open']> | undefined;
  let runner: DefaultRunner | undefined;

  afterEach(async () => {
    await runner?.shutdown();
    await db?.remove();
    runner = undefined;
    db = undefined;
  });

  it('shows a schedule no live runner can run as a fleet warning while the runner stays ok, and a rate with no attempts as —', async () => {
    db = backend.open();
    const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
    // A runner that had the workflow added a schedule for it, and is gone.
    const gone = await createRunner(db.config, { clock, workflows: [orphan], enableCronScheduling: false });
    await gone.addCronSchedule({ name: 'stale', workflowName: 'orphan', cronExpression: '0 * * * *' });
    await gone.shutdown();
    runner = await createRunner(db.config, { clock, cronEnableRecovery: false });
    await runner.start();
    clock.set(new Date('2026-01-01T01:05:00Z')); // due at 01:00, past the 60 s lost threshold
    const dashboard = createDashboard({ client: runner });

    const api = await dashboard.fetch(new Request(`${ORIGIN}/api/overview`));
    expect(api.status).toBe(200);
    const overview = (await api.json()) as {
      health: { status: string; strandedSchedules: { name: string }[] };
      orphanSchedules: { name: string }[];
      cron: { totalExecutions: number; successRate: number | null };
    };
    expect(overview.health.status).toBe('ok');
    expect(overview.health.strandedSchedules.map((s) => s.name)).toEqual(['stale']);
    expect(overview.orphanSchedules.map((s) => s.name)).toEqual(['stale']);
    expect(overview.cron).toMatchObject({ totalExecutions: 0, successRate: null });

    const page = await (await dashboard.fetch(new Request(`${ORIGIN}/`))).text();
    expect(page).toContain('<span class="badge st-ok">ok</span>');
    expect(page).toMatch(/<div class="panel note-panel" data-fleet-warning>[\s\S]*>stale<\/a>/);
    expect(page).toContain('<div class="v">—</div><div class="k">hand-off success</div>');
    expect(page).not.toContain('NaN');
  });

  it('shows why a runner is unhealthy beside its badge', async () => {
    db = backend.open();
    runner = await createRunner(db.config, { enableCronScheduling: false });
    const page = await (await createDashboard({ client: runner }).fetch(new Request(`${ORIGIN}/`))).text();
    expect(page).toContain(
      '<div class="v"><span class="badge st-unhealthy">unhealthy</span></div><div class="k">health: not started</div>',
    );
  });
});
