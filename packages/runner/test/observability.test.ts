import { newId } from '@orreryjs/core';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postgresUrl } from '../../../test/support/postgres.js';
import { type CronMissedEvent, defineWorkflow, ManualClock, NonRetryableError } from '../src/index.js';
import { OTHER_SCHEDULES, RunnerMetrics, SCHEDULE_LABEL_LIMIT } from '../src/metrics.js';
import { ADAPTERS, runnersPerTest, waitFor } from './support.js';

const etl = defineWorkflow({
  name: 'etl',
  tasks: [
    { id: 'extract', run: (ctx) => void ctx.set('rows', 3) },
    {
      id: 'load',
      dependsOn: ['extract'],
      retry: { maxAttempts: 1 },
      run: () => {
        throw new NonRetryableError('the warehouse is read-only');
      },
    },
    { id: 'audit', dependsOn: ['load'], trigger: 'all_done', when: () => false, run: () => {} },
  ],
});

/** The value of one sample of the exposition text, or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe.each(ADAPTERS)('health and metrics on $name', (adapter) => {
  const perTest = runnersPerTest(adapter, () => ({ workflows: [etl], pollIntervalMs: 20 }), {
    shutdownTimeoutMs: 1000,
  });
  const { open } = perTest;

  it('reports unhealthy before start and ok with its loops running after', async () => {
    const runner = await open({ cronEnableRecovery: false });
    expect(await runner.health()).toMatchObject({
      status: 'unhealthy',
      reasons: ['not started'],
      taskLoopRunning: false,
      schedulerRunning: false,
    });
    await runner.start();
    const health = await runner.health();
    expect(health).toMatchObject({
      status: 'ok',
      reasons: [],
      runnerId: runner.runnerId,
      taskLoopRunning: true,
      schedulerRunning: true,
      recoveryRunning: false,
      lostOccurrences: 0,
      stalledTasks: 0,
      runningTasks: 0,
    });
  });

  it('reports unhealthy after shutdown instead of throwing', async () => {
    const runner = await open();
    await runner.start();
    await runner.shutdown();
    expect(await runner.health()).toMatchObject({
      status: 'unhealthy',
      reasons: ['shut down'],
      taskLoopRunning: false,
      schedulerRunning: false,
      lostOccurrences: 0,
      stalledTasks: 0,
    });
  });

  it.runIf(adapter.name === 'postgres')(
    'reports unhealthy, not a throw, while its database cannot be read',
    async () => {
      const runner = await open({ enableCronScheduling: false });
      await runner.start();
      expect(await runner.health()).toMatchObject({ status: 'ok' });
      const schema = perTest.db.config.schema!;
      const admin = new pg.Client({ connectionString: postgresUrl() });
      await admin.connect();
      try {
        // Its tables vanish from under it, as when the database is unreachable.
        await admin.query(`ALTER SCHEMA "${schema}" RENAME TO "${schema}_away"`);
        expect(await runner.health()).toMatchObject({
          status: 'unhealthy',
          reasons: [expect.stringContaining('database unreachable')],
        });
      } finally {
        await admin.query(`ALTER SCHEMA "${schema}_away" RENAME TO "${schema}"`).catch(() => {});
        await admin.end();
      }
      // Readable again, it is not unhealthy. A loop that ticked while the tables were away backs off
      // first (the heartbeat: 2 × 10 s), degraded meanwhile: the next test covers degraded → ok.
      await waitFor(async () => (await runner.health()).status !== 'unhealthy');
    },
  );

  it.runIf(adapter.name === 'postgres')(
    'reports degraded while a loop of its own keeps failing, ok once it recovers',
    async () => {
      const runner = await open({ enableCronScheduling: false });
      await runner.start();
      const schema = perTest.db.config.schema!;
      const admin = new pg.Client({ connectionString: postgresUrl() });
      await admin.connect();
      try {
        // Every claim's UPDATE of a task row fails, while the reads health makes still work.
        await admin.query(`CREATE FUNCTION "${schema}".refuse_claims() RETURNS trigger LANGUAGE plpgsql
        AS $$ BEGIN RAISE EXCEPTION 'claims refused by the test'; END $$`);
        await admin.query(`CREATE TRIGGER refuse_claims BEFORE UPDATE ON "${schema}".task_executions
        FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse_claims()`);
        await runner.executeAsync('etl');
        await waitFor(async () => (await runner.health()).status !== 'ok');
        expect(await runner.health()).toMatchObject({
          status: 'degraded',
          reasons: [expect.stringMatching(/^task-claim loop failing \(\d+ ticks? in a row\)$/)],
        });
      } finally {
        await admin.query(`DROP TRIGGER IF EXISTS refuse_claims ON "${schema}".task_executions`);
        await admin.end();
      }
      await waitFor(async () => (await runner.health()).status === 'ok');
      expect(await runner.health()).toMatchObject({ status: 'ok', reasons: [] });
    },
  );

  it('lists a running task holding an expired lease as stalled, and stays ok: a fleet condition', async () => {
    const blocker = defineWorkflow({
      name: 'blocker',
      tasks: [
        {
          id: 'hold',
          run: (_ctx, info) => new Promise((resolve) => info.signal.addEventListener('abort', () => resolve())),
        },
      ],
    });
    const holder = await open({ workflows: [blocker], enableCronScheduling: false });
    await holder.start();
    const execution = await holder.executeAsync('blocker');
    await waitFor(async () => (await holder.getExecutionStatus(execution.id)) === 'running');
    expect((await holder.health()).stalledTasks).toBe(0);
    // A runner whose clock is a minute ahead sees the holder's 30 s lease as expired; it has
    // not registered the workflow, so it does not take the task over.
    const ahead = await open({
      workflows: [],
      enableCronScheduling: false,
      clock: { now: () => new Date(Date.now() + 60_000) },
    });
    expect(await ahead.health()).toMatchObject({ status: 'unhealthy', stalledTasks: 1 });
    await ahead.start();
    expect(await ahead.health()).toMatchObject({ status: 'ok', stalledTasks: 1, lostOccurrences: 0 });
  });

  it('counts task outcomes, durations and finished pipelines in its metrics', async () => {
    const runner = await open({ enableCronScheduling: false });
    await runner.start();
    const result = await runner.execute('etl');
    expect(result.status).toBe('failed');
    const text = await runner.metrics();
    expect(
      sample(text, 'orrery_task_outcomes_total{workflow="etl",task="extract",outcome="completed",will_retry="false"}'),
    ).toBe(1);
    expect(
      sample(text, 'orrery_task_outcomes_total{workflow="etl",task="load",outcome="failed",will_retry="false"}'),
    ).toBe(1);
    expect(
      sample(text, 'orrery_task_outcomes_total{workflow="etl",task="audit",outcome="skipped",will_retry="false"}'),
    ).toBe(1);
    expect(sample(text, 'orrery_task_duration_seconds_count{workflow="etl",task="extract"}')).toBe(1);
    expect(sample(text, 'orrery_pipelines_finished_total{workflow="etl",status="failed"}')).toBe(1);
    await waitFor(async () => sample(await runner.metrics(), 'orrery_tasks_running') === 0);
  });

  it('keeps counting when the user removes every listener', async () => {
    const runner = await open({ enableCronScheduling: false });
    runner.removeAllListeners();
    await runner.start();
    await runner.execute('etl');
    expect(sample(await runner.metrics(), 'orrery_pipelines_finished_total{workflow="etl",status="failed"}')).toBe(1);
  });

  it('counts cron fires by schedule and source, and the lag of scheduled ones only', async () => {
    const clock = new ManualClock(new Date('2026-01-01T00:00:30Z'));
    const runner = await open({ clock, cronEnableRecovery: false, cronPollIntervalMs: 20 });
    await runner.addCronSchedule({ name: 'nightly', workflowName: 'etl', cronExpression: '0 0 * * *' });
    await runner.triggerCronSchedule('nightly');
    await runner.backfillCronSchedule('nightly', {
      start: new Date('2025-12-30T00:00:00Z'),
      end: new Date('2025-12-31T00:00:01Z'),
    });
    let text = await runner.metrics();
    expect(sample(text, 'orrery_cron_fired_total{schedule="nightly",source="manual"}')).toBe(1);
    expect(sample(text, 'orrery_cron_fired_total{schedule="nightly",source="backfill"}')).toBe(2);
    // A trigger or a backfill is handed off when asked: no lateness to observe.
    expect(sample(text, 'orrery_cron_fire_lag_seconds_count{schedule="nightly"}')).toBeUndefined();
    clock.set(new Date('2026-01-02T00:00:00Z'));
    await runner.start();
    await waitFor(
      async () => sample(await runner.metrics(), 'orrery_cron_fired_total{schedule="nightly",source="schedule"}') === 1,
    );
    text = await runner.metrics();
    expect(sample(text, 'orrery_cron_fire_lag_seconds_count{schedule="nightly"}')).toBe(1);
  });

  it('lists a due schedule no live runner can run as stranded, stays ok, and gauges it', async () => {
    const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
    const orphan = defineWorkflow({ name: 'orphan', tasks: [{ id: 'only', run: () => {} }] });
    const gone = await open({ clock, workflows: [orphan], enableCronScheduling: false });
    const schedule = await gone.addCronSchedule({
      name: 'orphaned',
      workflowName: 'orphan',
      cronExpression: '0 * * * *',
    });
    await gone.start();
    await gone.shutdown();
    const runner = await open({ clock, cronEnableRecovery: false });
    await runner.start();
    expect(await runner.health()).toMatchObject({ status: 'ok', strandedSchedules: [] });
    expect(sample(await runner.metrics(), 'orrery_schedules_stranded')).toBe(0);
    clock.set(new Date('2026-01-01T01:05:00Z')); // due at 01:00, past the 60 s lost threshold
    // One stale schedule is the fleet's problem, not this runner's: listed, never unhealthy.
    expect(await runner.health()).toMatchObject({
      status: 'ok',
      reasons: [],
      strandedSchedules: [
        { id: schedule.id, name: 'orphaned', workflowName: 'orphan', nextRunAt: new Date('2026-01-01T01:00:00Z') },
      ],
    });
    expect(sample(await runner.metrics(), 'orrery_schedules_stranded')).toBe(1);
  });

  it('gauges ready tasks, running pipelines, lost and abandoned occurrences from the database', async () => {
    const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
    const runner = await open({ clock, enableCronScheduling: false });
    await runner.executeAsync('etl', {}, { runAt: new Date('2026-01-01T00:10:00Z') });
    await runner.executeAsync('etl');
    let text = await runner.metrics();
    expect(sample(text, 'orrery_tasks_ready')).toBe(1); // the delayed pipeline's task is not ready yet
    expect(sample(text, 'orrery_pipelines_running')).toBe(0);
    expect(sample(text, 'orrery_cron_lost_occurrences')).toBe(0);
    expect(sample(text, 'orrery_cron_abandoned_occurrences')).toBe(0);
    clock.set(new Date('2026-01-01T00:10:00Z'));
    text = await runner.metrics();
    expect(sample(text, 'orrery_tasks_ready')).toBe(2);
  });

  it('counts missed slots, not missed rows, and reports them with cron:missed', async () => {
    const clock = new ManualClock(new Date('2026-01-01T00:00:30Z'));
    const runner = await open({ clock, cronEnableRecovery: false, cronPollIntervalMs: 20 });
    const missed: CronMissedEvent[] = [];
    runner.on('cron:missed', (event) => missed.push(event));
    await runner.addCronSchedule({
      name: 'minutely',
      workflowName: 'etl',
      cronExpression: '* * * * *',
      catchupPolicy: 'skip',
    });
    clock.advance(10 * 60_000); // slots 00:01 … 00:10 are now more than a minute late, but for 00:10
    await runner.start();
    await waitFor(() => missed.length > 0);
    expect(missed).toEqual([
      expect.objectContaining({
        scheduleName: 'minutely',
        missedCount: 9,
        scheduledTime: new Date('2026-01-01T00:01:00Z'),
      }),
    ]);
    expect(sample(await runner.metrics(), 'orrery_cron_missed_total{schedule="minutely"}')).toBe(9);
  });

  it('keeps each runner’s metrics apart', async () => {
    const first = await open({ enableCronScheduling: false });
    const second = await open({ enableCronScheduling: false });
    await first.start();
    await first.execute('etl');
    expect(sample(await second.metrics(), 'orrery_pipelines_finished_total{workflow="etl",status="failed"}')).toBe(
      undefined,
    );
    expect(first.metricsRegistry).not.toBe(second.metricsRegistry);
  });
});

describe('metrics at many schedules', () => {
  it(`names the first ${SCHEDULE_LABEL_LIMIT} schedules and counts the rest under schedule="${OTHER_SCHEDULES}"`, async () => {
    const metrics = new RunnerMetrics(() => 0);
    const fire = (name: string) =>
      metrics.record('cron:fired', {
        scheduleId: newId(),
        scheduleName: name,
        occurrenceId: newId(),
        scheduledTime: new Date(),
        source: 'schedule',
        pipelineExecutionId: newId(),
        lagMs: 20,
      });
    for (let i = 0; i < SCHEDULE_LABEL_LIMIT + 5; i += 1) fire(`s${i}`);
    // A schedule named before the limit keeps its name.
    fire('s0');
    metrics.record('cron:missed', {
      scheduleId: newId(),
      scheduleName: `s${SCHEDULE_LABEL_LIMIT + 1}`,
      occurrenceId: newId(),
      scheduledTime: new Date(),
      missedCount: 3,
    });
    const text = await metrics.registry.metrics();
    const fired = text.split('\n').filter((line) => line.startsWith('orrery_cron_fired_total{'));
    expect(fired).toHaveLength(SCHEDULE_LABEL_LIMIT + 1);
    expect(sample(text, 'orrery_cron_fired_total{schedule="s0",source="schedule"}')).toBe(2);
    expect(sample(text, `orrery_cron_fired_total{schedule="s${SCHEDULE_LABEL_LIMIT - 1}",source="schedule"}`)).toBe(1);
    expect(
      sample(text, `orrery_cron_fired_total{schedule="s${SCHEDULE_LABEL_LIMIT}",source="schedule"}`),
    ).toBeUndefined();
    expect(sample(text, `orrery_cron_fired_total{schedule="${OTHER_SCHEDULES}",source="schedule"}`)).toBe(5);
    expect(sample(text, `orrery_cron_fire_lag_seconds_count{schedule="${OTHER_SCHEDULES}"}`)).toBe(5);
    expect(sample(text, `orrery_cron_missed_total{schedule="${OTHER_SCHEDULES}"}`)).toBe(3);
  });
});
