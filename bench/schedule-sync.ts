/**
 * syncCronSchedules throughput: schedules per second of one call, through a DefaultRunner that
 * never starts (as a deploy script runs it), on a fresh SQLite file and a fresh Postgres schema.
 *
 *   npm run bench:sync                      # SQLite and PostgreSQL, 100,000 schedules
 *   BENCH_ADAPTERS=sqlite BENCH_SCALE=0.1 npm run bench:sync
 *
 * Scenarios, each one call over the whole list: create every schedule; sync the same list
 * again (all unchanged, nothing written); change every expression (all updated, re-timed);
 * prune every one by delete (an empty list). Each row also has this process's CPU seconds
 * during the call, steadier than the wall time on a loaded machine (the database server's
 * work is not in it). Results are printed as a table and written to
 * bench/results/sync-<date>.json. Nothing asserts a time (see README.md).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CronScheduleInput, DefaultRunner, type DefaultRunnerConfig, defineWorkflow } from '@orreryjs/runner';
import pg from 'pg';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const ADAPTERS = (process.env.BENCH_ADAPTERS ?? 'sqlite,postgres').split(',');
const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const COUNT = Math.ceil(100_000 * SCALE);
const WORKFLOW = 'bench-sync';

const workflow = defineWorkflow({ name: WORKFLOW, tasks: [{ id: 'only', run: () => {} }] });

/** The list: `count` schedules, minute `m` of each one's expression set by `minute`. */
function scheduleList(count: number, minute: (index: number) => number): CronScheduleInput[] {
  return Array.from({ length: count }, (_, index) => ({
    name: `bench.s${index}`,
    workflowName: WORKFLOW,
    cronExpression: `${minute(index) % 60} * * * *`,
    context: { index },
  }));
}

interface Row {
  adapter: string;
  scenario: string;
  schedules: number;
  seconds: number;
  perSecond: number;
  /** CPU time of this process during the call (user + system): less sensitive to the machine's load than `seconds`, but blind to the database server's work. */
  cpuSeconds: number;
}

async function measure(adapter: string, config: DefaultRunnerConfig): Promise<Row[]> {
  const runner = await DefaultRunner.create({ ...config, workflows: [workflow], enableCronScheduling: false });
  const rows: Row[] = [];
  const timed = async (scenario: string, run: () => Promise<unknown>) => {
    // Progress: one call per scenario, so a line before and after it (a 100,000 call takes seconds).
    console.log(`  ${adapter}: ${scenario}, ${COUNT} schedules …`);
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await run();
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    rows.push({ adapter, scenario, schedules: COUNT, seconds, perSecond: Math.round(COUNT / seconds), cpuSeconds });
    console.log(`  ${adapter}: ${scenario} done in ${seconds.toFixed(2)} s (${Math.round(COUNT / seconds)}/s)`);
  };
  try {
    const list = scheduleList(COUNT, (index) => index);
    await timed('create', () => runner.syncCronSchedules(list));
    await timed('unchanged', () => runner.syncCronSchedules(list));
    await timed('update every expression', () => runner.syncCronSchedules(scheduleList(COUNT, (index) => index + 1)));
    await timed('prune by delete', () =>
      runner.syncCronSchedules([], { prune: 'delete', scope: { namePrefix: 'bench.' } }),
    );
  } finally {
    await runner.shutdown();
  }
  return rows;
}

// The load when the run began: the figures below move with it (see README.md).
const loadAtStart = loadavg().map((load) => load.toFixed(2));
const results: Row[] = [];
for (const adapter of ADAPTERS) {
  if (adapter === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-bench-sync-'));
    try {
      results.push(...(await measure('sqlite', { database: `sqlite:${join(dir, 'bench.db')}` })));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } else if (adapter === 'postgres') {
    const schema = `bench_sync_${process.pid}`;
    try {
      results.push(...(await measure('postgres', { database: POSTGRES_URL, schema })));
    } finally {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    }
  }
}

console.table(
  results.map((row) => ({ ...row, seconds: row.seconds.toFixed(2), cpuSeconds: row.cpuSeconds.toFixed(2) })),
);
const environment = {
  cpus: cpus().length,
  loadAtStart,
  loadavg: loadavg().map((load) => load.toFixed(2)),
  scale: SCALE,
};
mkdirSync(new URL('results/', import.meta.url), { recursive: true });
// BENCH_LABEL names the run in the file, so that runs of one session (before/after) do not overwrite each other.
const label = process.env.BENCH_LABEL === undefined ? '' : `-${process.env.BENCH_LABEL}`;
const file = new URL(`results/sync-${new Date().toISOString().slice(0, 10)}${label}.json`, import.meta.url);
writeFileSync(file, `${JSON.stringify({ environment, results }, null, 2)}\n`);
console.log(`written to ${file.pathname}`);
