/**
 * Durable waits on PostgreSQL: what sleeping and waiting cost, against the same runner idle or
 * starting plain work, in one run (issue 23's figures).
 *
 *   npm run bench:waits                   # 10,000 sleepers, 200 signals
 *   BENCH_SCALE=0.1 npm run bench:waits
 *
 * 1. Asleep: N pipelines whose only task has `delayMs` far ahead are written; the runner's CPU
 *    (process.cpuUsage, user + system) over a window while they sleep, against the same
 *    window with no work at all. A sleeping task is a row, so both should be the idle cost of
 *    the claim loop's polls.
 * 2. Signal to start: a wait task's signal sent, to its dependent task's first instruction
 *    (p50/p95), against executeAsync of a one-task pipeline to its task's first instruction;
 *    one of each in turn, so that both see the same load.
 *
 * PostgreSQL comes from TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test.
 * Results are printed and written to bench/results/waits-<date>.json.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';
import pg from 'pg';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SLEEPERS = Math.ceil(10_000 * SCALE);
const SIGNALS = Math.ceil(200 * SCALE);
const WINDOW_MS = 5_000;
const CHUNK = 500;

const started = new Map<string, number>();
const sleeper = defineWorkflow({
  name: 'sleeper',
  tasks: [{ id: 'nap', delayMs: 3_600_000, run: () => {} }],
});
const plain = defineWorkflow({
  name: 'plain',
  tasks: [{ id: 'go', run: (_ctx, info) => void started.set(info.executionId, performance.now()) }],
});
const approval = defineWorkflow({
  name: 'approval',
  tasks: [
    { id: 'approved', waitFor: { signal: 'approved' } },
    { id: 'next', dependsOn: ['approved'], run: (_ctx, info) => void started.set(info.executionId, performance.now()) },
  ],
});

const schema = `orrery_waits_${randomBytes(4).toString('hex')}`;
const runner = await DefaultRunner.create({
  database: POSTGRES_URL,
  schema,
  enableCronScheduling: false,
  workflows: [sleeper, plain, approval],
});
await runner.start();

function progress(what: string): void {
  process.stdout.write(`\r${what}`.padEnd(60));
}

/** This process's CPU milliseconds (user + system) over `ms` of doing nothing but its loops. */
async function cpuOver(ms: number): Promise<number> {
  const before = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 1));
}

try {
  // 1. Idle, then asleep.
  const idleCpuMs = await cpuOver(WINDOW_MS);
  for (let first = 0; first < SLEEPERS; first += CHUNK) {
    await runner.executeAsyncMany(
      Array.from({ length: Math.min(CHUNK, SLEEPERS - first) }, () => ({ workflowName: 'sleeper' })),
    );
    progress(`asleep: ${Math.min(first + CHUNK, SLEEPERS)}/${SLEEPERS} pipelines written`);
  }
  const asleepCpuMs = await cpuOver(WINDOW_MS);
  process.stdout.write('\n');

  // 2. Plain start latency and signal-to-start latency, one at a time, alternated, so that both
  // see the same load on a shared machine.
  const plainMs: number[] = [];
  const signalMs: number[] = [];
  for (let n = 0; n < SIGNALS; n += 1) {
    const fromPlain = performance.now();
    const plainExecution = await runner.executeAsync('plain');
    await until(() => started.has(plainExecution.id));
    plainMs.push(started.get(plainExecution.id)! - fromPlain);
    const execution = await runner.executeAsync('approval');
    // Waiting: its wait task given back (its deadline never comes), so the signal wakes it.
    await new Promise((resolve) => setTimeout(resolve, 30));
    const from = performance.now();
    await runner.signal(execution.id, 'approved');
    await until(() => started.has(execution.id));
    signalMs.push(started.get(execution.id)! - from);
    if (n % 20 === 0) progress(`plain and signal starts: ${n}/${SIGNALS}`);
  }
  process.stdout.write('\n');

  const result = {
    date: new Date().toISOString(),
    sleepers: SLEEPERS,
    windowMs: WINDOW_MS,
    idleCpuMs,
    asleepCpuMs,
    asleepToIdle: asleepCpuMs / idleCpuMs,
    plainStartMs: { p50: percentile(plainMs, 50), p95: percentile(plainMs, 95) },
    signalToStartMs: { p50: percentile(signalMs, 50), p95: percentile(signalMs, 95) },
    signalToPlainP50: percentile(signalMs, 50) / percentile(plainMs, 50),
  };
  console.log(JSON.stringify(result, null, 2));
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(
    new URL(`./results/waits-${result.date.slice(0, 10)}.json`, import.meta.url),
    `${JSON.stringify(result, null, 2)}\n`,
  );
} finally {
  await runner.shutdown({ timeoutMs: 1_000 });
  const admin = new pg.Client({ connectionString: POSTGRES_URL, user: 'postgres' });
  await admin.connect();
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  await admin.end();
}
