/**
 * The demo's worker process: a runner with the scheduler, recovery and task loops. It reports
 * what happens as one JSON object per stdout line, for the parent (examples/demo/main.ts) to
 * display, and shuts down gracefully on SIGTERM.
 *
 * Environment: ORRERY_DEMO_DATABASE (a sqlite: URL), ORRERY_DEMO_START_AT (the schedule's
 * startAt, ISO-8601), ORRERY_DEMO_WORKER (a label).
 */
import { DefaultRunner } from '@orreryjs/runner';
import { DEMO_SETTINGS, etl, etlSchedule } from './workflow.js';

const label = process.env.ORRERY_DEMO_WORKER ?? 'worker';
const send = (message: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(message)}\n`);

const runner = await DefaultRunner.create({
  database: process.env.ORRERY_DEMO_DATABASE,
  workflows: [etl],
  runnerId: `demo-${label}-${process.pid}`,
  ...DEMO_SETTINGS,
});

runner.on('cron:fired', (e) =>
  send({
    type: 'fired',
    scheduledTime: e.scheduledTime,
    lagMs: e.lagMs,
    source: e.source,
    executionId: e.pipelineExecutionId,
  }),
);
runner.on('cron:lost', (e) => send({ type: 'lost', scheduledTime: e.scheduledTime, attempt: e.recoveryAttempt }));
runner.on('cron:recovered', (e) =>
  send({ type: 'recovered', scheduledTime: e.scheduledTime, executionId: e.pipelineExecutionId }),
);
runner.on('cron:abandoned', (e) => send({ type: 'abandoned', scheduledTime: e.scheduledTime, reason: e.reason }));
runner.on('task:started', (e) => send({ type: 'task', state: 'started', ...e }));
runner.on('task:completed', (e) => send({ type: 'task', state: 'completed', ...e }));
runner.on('task:failed', (e) => send({ type: 'task', state: 'failed', ...e }));
runner.on('pipeline:completed', (e) => send({ type: 'pipeline', ...e }));
runner.on('pipeline:failed', (e) => send({ type: 'pipeline', ...e }));

// Adding the schedule at every start-up is safe: the same definition returns the existing schedule.
const schedule = await runner.addCronSchedule(etlSchedule(new Date(process.env.ORRERY_DEMO_START_AT ?? Date.now())));
await runner.start();
send({ type: 'ready', pid: process.pid, runnerId: runner.runnerId, scheduleId: schedule.id });

process.once('SIGTERM', () => {
  void runner.shutdown({ timeoutMs: 2_000 }).then(
    () => {
      send({ type: 'stopped' });
      process.exit(0);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
});
