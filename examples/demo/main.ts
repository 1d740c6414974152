/**
 * `npm run demo`: guaranteed cron scheduling, live, on embedded SQLite with nothing to set up.
 *
 * An ETL workflow (a diamond: extract → transform-a / transform-b → load, transform-b failing
 * its first attempt) is scheduled every 2 seconds. A worker process runs the scheduler and the
 * tasks; this process watches it, kills it with SIGKILL mid-task, restarts it, stops it
 * gracefully, and then checks the ledger: every due slot fired exactly once.
 * Exits 0 when nothing was lost or duplicated, 1 otherwise.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { occurrencesBetween } from '@orreryjs/cron';
import { DefaultRunner } from '@orreryjs/runner';
import { printSummary } from './summary.js';
import { killIfRunning, startWorker, type WorkerMessage, type WorkerProcess } from './worker-process.js';
import { CRON_EXPRESSION, DEMO_SETTINGS, etl, etlSchedule, SCHEDULE_NAME, WORKFLOW_NAME } from './workflow.js';

const RUN_BEFORE_KILL_MS = 7_000;
const DOWNTIME_MS = 3_000;
const RUN_AFTER_RESTART_MS = 6_000;
const WATCHDOG_MS = 55_000;

const t0 = performance.now();
const hms = (at: unknown) => new Date(at as string).toISOString().slice(11, 19);
const say = (who: string, text: string) =>
  console.log(`${((performance.now() - t0) / 1000).toFixed(1).padStart(5)}s  ${who.padEnd(3)} ${text}`);
const section = (text: string) => console.log(`\n── ${text}\n`);

const dir = mkdtempSync(join(tmpdir(), 'orrery-demo-'));
const database = `sqlite:${join(dir, 'demo.db')}`;
const workers: WorkerProcess[] = [];
const cleanUp = () => {
  for (const worker of workers) killIfRunning(worker);
  rmSync(dir, { recursive: true, force: true });
};
const watchdog = setTimeout(() => {
  console.error(`The demo did not finish within ${WATCHDOG_MS / 1000} s; giving up.`);
  cleanUp();
  process.exit(1);
}, WATCHDOG_MS);
process.once('SIGINT', () => {
  cleanUp();
  process.exit(130);
});

// What the workers report, remembered for the display and the summary.
const slotOf = new Map<string, string>();
const firedBy = new Map<string, string>();
const tasksRanOn = new Map<string, Set<string>>();
const failedAttempts = new Set<string>();
const running = new Map<string, string>();
let onTaskStarted: ((taskId: string) => void) | undefined;

function onMessage(who: string, m: WorkerMessage): void {
  const id = String(m.executionId ?? '');
  const slot = slotOf.get(id) ?? '?';
  switch (m.type) {
    case 'fired': {
      slotOf.set(id, hms(m.scheduledTime));
      firedBy.set(id, who);
      const late = Number(m.lagMs) > 1_000 ? '  (late: no worker was running at that time)' : '';
      say(who, `⏱  fired ${hms(m.scheduledTime)}  lag ${String(m.lagMs).padStart(4)} ms${late}`);
      break;
    }
    case 'task': {
      const key = `${id}/${m.taskId}`;
      tasksRanOn.set(id, (tasksRanOn.get(id) ?? new Set<string>()).add(who));
      if (m.state === 'started') {
        running.set(key, `${slot} ${m.taskId} (attempt ${m.attempt})`);
        const attempt = Number(m.attempt);
        if (attempt > 1 && !failedAttempts.has(`${key}/${attempt - 1}`)) {
          say(who, `   ${slot} ${m.taskId}: attempt ${attempt}, taking over from the killed worker (lease expired)`);
        }
        onTaskStarted?.(String(m.taskId));
      } else running.delete(key);
      if (m.state === 'failed') {
        failedAttempts.add(`${key}/${m.attempt}`);
        const next = m.willRetry ? 'will retry' : 'gives up';
        say(who, `   ${slot} ${m.taskId}: attempt ${m.attempt} failed (${m.error}); ${next}`);
      }
      break;
    }
    case 'pipeline':
      say(who, `✓  ${slot} pipeline ${m.status} in ${(Number(m.durationMs) / 1000).toFixed(1)} s`);
      break;
    case 'lost':
      say(
        who,
        `!  ${hms(m.scheduledTime)} still claimed past the lost threshold: recovery takes it (attempt ${m.attempt})`,
      );
      break;
    case 'recovered':
      slotOf.set(id, hms(m.scheduledTime));
      firedBy.set(id, `${who}*`);
      say(who, `↺  ${hms(m.scheduledTime)} recovered: handed off with its idempotency key`);
      break;
    case 'abandoned':
      say(who, `✗  ${hms(m.scheduledTime)} abandoned: ${m.reason}`);
      break;
    case 'ready':
      say(who, `worker ready (pid ${m.pid}); schedule re-added at start-up, existing one reused`);
      break;
    case 'stopped':
      say(who, 'worker shut down gracefully');
      break;
  }
}

/** Resolves once `check` holds, or with false after `timeoutMs`. */
async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check()) return true;
    await sleep(200);
  }
  return false;
}

/** Waits (up to 4 s) for a long task to start, then lets it run a little: the moment to kill. */
async function midTask(): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 4_000);
    onTaskStarted = (taskId) => {
      if (taskId !== 'transform-a') return;
      clearTimeout(timer);
      resolve();
    };
  });
  onTaskStarted = undefined;
  await sleep(150);
}

const admin = await DefaultRunner.create({ database, workflows: [etl], enableCronScheduling: false, ...DEMO_SETTINGS });
try {
  // Never started: this process only manages the schedule and reads the database.
  const startAt = new Date(Math.ceil((Date.now() + 2_500) / 2_000) * 2_000);
  const schedule = await admin.addCronSchedule(etlSchedule(startAt));
  const firstSlot = schedule.nextRunAt!;
  console.log(`Orrery demo: workflow "${WORKFLOW_NAME}" (extract → transform-a / transform-b → load)`);
  console.log(`schedule "${SCHEDULE_NAME}": "${CRON_EXPRESSION}" (every 2 s) from ${hms(firstSlot)} UTC`);
  console.log(`database: ${database} (deleted at the end)`);
  const env = { ORRERY_DEMO_DATABASE: database, ORRERY_DEMO_START_AT: startAt.toISOString() };

  section('worker w1 starts: it runs the scheduler, cron recovery and the tasks');
  const w1 = startWorker('w1', env, onMessage);
  workers.push(w1);
  await w1.ready;
  await sleep(RUN_BEFORE_KILL_MS);
  await midTask();
  section(`SIGKILL w1 (pid ${w1.child.pid}) while ${[...running.values()].join(', ') || 'idle'} runs`);
  w1.child.kill('SIGKILL');
  await w1.exited;
  running.clear();
  say('', `w1 is dead; nothing runs for ${DOWNTIME_MS / 1000} s, and the slots due meanwhile wait in the schedule`);
  await sleep(DOWNTIME_MS);

  section(
    'worker w2 starts: catches up the slots due while no worker ran; retakes w1’s tasks once their leases expire',
  );
  const w2 = startWorker('w2', env, onMessage);
  workers.push(w2);
  await w2.ready;
  await sleep(RUN_AFTER_RESTART_MS);

  const cutoff = new Date();
  section(`wrapping up: every slot up to ${hms(cutoff)} must be handed off; then the schedule is disabled`);
  const due = occurrencesBetween(CRON_EXPRESSION, { start: firstSlot, end: new Date(cutoff.getTime() + 1) });
  const handedOff = async () => {
    const rows = await admin.getCronExecutionHistory(SCHEDULE_NAME, { limit: 1000 });
    const fired = new Set(rows.filter((r) => r.status === 'handed_off').map((r) => r.scheduledTime.getTime()));
    return due.every((slot) => fired.has(slot.getTime()));
  };
  await until(handedOff, DEMO_SETTINGS.cronLostThresholdMs + DEMO_SETTINGS.cronRecoveryIntervalMs + 5_000);
  await admin.setCronScheduleEnabled(SCHEDULE_NAME, false);
  const allFinished = async () => {
    const pipelines = await admin.listExecutions({ workflowName: WORKFLOW_NAME, limit: 1000 });
    return pipelines.every((p) => p.status === 'completed' || p.status === 'failed' || p.status === 'cancelled');
  };
  await until(allFinished, 15_000);
  section('SIGTERM w2: graceful shutdown');
  w2.child.kill('SIGTERM');
  const exit = await w2.exited;

  section('summary, from the database: the cron ledger and the pipelines');
  const verdict = await printSummary(admin, firstSlot, cutoff, { firedBy, tasksRanOn });
  const ok = verdict.lost === 0 && verdict.duplicates === 0 && verdict.incomplete === 0 && exit.code === 0;
  console.log(
    `\nResult: ${verdict.fired} occurrences fired, ${verdict.completed} pipelines completed, ` +
      `${verdict.lost} lost, ${verdict.duplicates} duplicates — ${ok ? 'every slot ran exactly once.' : 'FAILED.'}`,
  );
  if (exit.code !== 0) console.log(`w2 exited with ${exit.code ?? exit.signal} instead of 0.`);
  process.exitCode = ok ? 0 : 1;
} finally {
  await admin.shutdown();
  cleanUp();
  clearTimeout(watchdog);
}
