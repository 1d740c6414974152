/**
 * Two runner processes on PostgreSQL sharing the same schedules: `npx tsx --conditions=source examples/multi-instance.ts`
 *
 * This process adds four every-second schedules (for a 5-second window) without running a
 * scheduler itself, then starts two worker processes (this file with the argument `worker`).
 * Both run the scheduler and the tasks; claims use FOR UPDATE SKIP LOCKED, so each occurrence
 * is fired by exactly one of them. At the end the ledger and the pipelines are checked: every
 * slot fired once, none twice. Exits 0 when so, 1 otherwise.
 *
 * ORRERY_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) and ORRERY_SCHEMA
 * (default orrery_example) choose the database; the schema is created if missing, and this
 * run's schedules are deleted at the end (their ledger and pipelines stay, as history).
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { occurrencesBetween } from '@orreryjs/cron';
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';

const database = process.env.ORRERY_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = process.env.ORRERY_SCHEMA ?? 'orrery_example';
const SCHEDULES = 4;
const WINDOW_MS = 5_000;

const report = defineWorkflow({
  name: 'multi-instance-report',
  tasks: [
    {
      id: 'collect',
      run: async (ctx) => {
        await sleep(100);
        ctx.set('rows', 42);
      },
    },
    {
      id: 'publish',
      dependsOn: ['collect'],
      run: async (ctx) => {
        await sleep(50);
        ctx.set('published', true);
      },
    },
  ],
});
const hms = (at: Date | string) => new Date(at).toISOString().slice(11, 19);

if (process.argv[2] === 'worker') {
  // A worker: scheduler, recovery and task loops; reports each fire and task on stdout as JSON.
  const runner = await DefaultRunner.create({
    database,
    schema,
    workflows: [report],
    cronMaxOccurrencesPerTick: 1, // one occurrence per claim transaction, so the two workers split a second's four
    cronPollIntervalMs: 200, // how soon a worker notices schedules another process added
    pollIntervalMs: 50,
  });
  const send = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);
  runner.on('cron:fired', (e) =>
    send({ type: 'fired', schedule: e.scheduleName, slot: e.scheduledTime, lagMs: e.lagMs, id: e.pipelineExecutionId }),
  );
  runner.on('task:completed', (e) => send({ type: 'task', id: e.executionId, taskId: e.taskId }));
  await runner.start();
  send({ type: 'ready', runnerId: runner.runnerId });
  process.once('SIGTERM', () => void runner.shutdown({ timeoutMs: 2_000 }).then(() => process.exit(0)));
} else {
  process.exitCode = await main();
}

async function main(): Promise<number> {
  const firedBy = new Map<string, string>();
  const tasksBy = new Map<string, number>();
  const workers = ['w1', 'w2'].map((label) => {
    const self = fileURLToPath(import.meta.url);
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', self, 'worker'], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const ready = new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`worker ${label} exited with ${code} before it was ready`)));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const m = JSON.parse(line) as Record<string, string>;
        if (m.type === 'ready') resolve();
        if (m.type === 'task') tasksBy.set(label, (tasksBy.get(label) ?? 0) + 1);
        if (m.type !== 'fired') return;
        firedBy.set(String(m.id), label);
        console.log(`  ${label} fired ${m.schedule}  ${hms(String(m.slot))}  lag ${m.lagMs} ms`);
      });
    });
    return { label, child, ready, exited: once(child, 'exit') };
  });
  const watchdog = setTimeout(() => {
    console.error('The example did not finish within 30 s; giving up.');
    for (const w of workers) w.child.kill('SIGKILL');
    process.exit(1);
  }, 30_000);
  try {
    return await share(workers, firedBy, tasksBy);
  } finally {
    clearTimeout(watchdog);
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
  }
}

/** Adds this run's schedules, lets the workers fire them, and checks the outcome in the database. */
async function share(
  workers: { label: string; child: ChildProcess; ready: Promise<void>; exited: Promise<unknown> }[],
  firedBy: Map<string, string>,
  tasksBy: Map<string, number>,
): Promise<number> {
  await Promise.all(workers.map((w) => w.ready));

  // This process manages schedules only: no scheduler loop, never started.
  const admin = await DefaultRunner.create({ database, schema, workflows: [report], enableCronScheduling: false });
  const tag = randomBytes(3).toString('hex');
  const startAt = new Date(Math.ceil((Date.now() + 1_500) / 1_000) * 1_000);
  const endAt = new Date(startAt.getTime() + WINDOW_MS);
  const names = Array.from({ length: SCHEDULES }, (_, i) => `s${i + 1}-${tag}`);
  for (const name of names) {
    await admin.addCronSchedule({ name, workflowName: report.name, cronExpression: '* * * * * *', startAt, endAt });
  }
  console.log(`database ${database.replace(/:[^:@/]*@/, ':***@')}, schema "${schema}"; workers w1 and w2 started`);
  console.log(
    `${SCHEDULES} schedules "* * * * * *" active in [${hms(startAt)}, ${hms(endAt)}), added by this process\n`,
  );

  // Wait for the window to pass and every pipeline to finish (at most 15 s).
  const slots = occurrencesBetween('* * * * * *', { start: startAt, end: endAt });
  const deadline = Date.now() + WINDOW_MS + 15_000;
  let ledger = await histories(admin, names);
  while (Date.now() < deadline) {
    ledger = await histories(admin, names);
    const pipelines = await Promise.all(
      ledger
        .flatMap((r) => (r.pipelineExecutionId ? [r.pipelineExecutionId] : []))
        .map((id) => admin.getExecutionStatus(id)),
    );
    if (ledger.length === slots.length * SCHEDULES && pipelines.every((s) => s === 'completed')) break;
    await sleep(250);
  }
  for (const w of workers) w.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));

  // The verdict, from the database: one handed_off ledger row per (schedule, slot), one pipeline per occurrence.
  const recent = await admin.listExecutions({ workflowName: report.name, limit: 1000 });
  const results = await Promise.all(recent.map((p) => admin.getExecutionResult(p.executionId)));
  const pipelinesPerOccurrence = new Map<string, number>();
  for (const r of results) {
    if (!names.includes(String(r.finalContext.schedule_name))) continue;
    const key = `${r.finalContext.schedule_name}@${r.finalContext.scheduled_time}`;
    pipelinesPerOccurrence.set(key, (pipelinesPerOccurrence.get(key) ?? 0) + 1);
  }
  let lost = 0;
  for (const name of names) {
    for (const slot of slots) {
      const key = `${name}@${slot.toISOString()}`;
      if (!ledger.some((r) => r.key === key && r.status === 'handed_off')) lost += 1;
    }
  }
  const duplicates = [...pipelinesPerOccurrence.values()].filter((n) => n > 1).length;
  const completed = results.filter(
    (r) => names.includes(String(r.finalContext.schedule_name)) && r.status === 'completed',
  );
  const count = (label: string) => [...firedBy.values()].filter((l) => l === label).length;
  console.log('');
  for (const w of workers)
    console.log(`  ${w.label}: fired ${count(w.label)} occurrences, ran ${tasksBy.get(w.label) ?? 0} tasks`);
  console.log(`  occurrences due ${slots.length * SCHEDULES}, pipelines completed ${completed.length}`);
  console.log(
    `\nResult: ${lost} lost, ${duplicates} duplicates${lost + duplicates === 0 ? ' — every occurrence fired exactly once.' : '.'}`,
  );

  for (const name of names) await admin.deleteCronSchedule(name); // the ledger stays
  await admin.shutdown();
  return lost === 0 && duplicates === 0 && completed.length === slots.length * SCHEDULES ? 0 : 1;
}

/** The ledgers of this run's schedules, each row keyed by schedule name and slot. */
async function histories(admin: DefaultRunner, names: string[]) {
  const all = await Promise.all(
    names.map(async (name) =>
      (await admin.getCronExecutionHistory(name)).map((row) => ({
        ...row,
        key: `${name}@${row.scheduledTime.toISOString()}`,
      })),
    ),
  );
  return all.flat();
}
