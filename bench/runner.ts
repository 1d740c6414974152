/**
 * Runner throughput and latency, end to end through a real database.
 *
 *   npm run bench:runner                      # SQLite and PostgreSQL
 *   BENCH_ADAPTERS=sqlite npm run bench:runner
 *   BENCH_SCALE=0.2 npm run bench:runner      # fewer pipelines, for a quick look
 *
 * On PostgreSQL it also runs the cross-process scenario (bench/cross-process-child.ts): a client
 * process with no task code starts one-task pipelines one at a time with random 0–50 ms gaps, a
 * worker process runs them, both with default settings; start → task start and start →
 * completion seen by the client, with `listen` on (LISTEN/NOTIFY) and off (polling only).
 *
 * PostgreSQL comes from TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test; each
 * run uses a fresh schema and drops it. Results are printed as a table and written to
 * bench/results/runner-<date>.json (runner-<date>-<adapters>.json with BENCH_ADAPTERS).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DefaultRunner, type DefaultRunnerConfig, defineWorkflow, type PipelineExecution } from '@orreryjs/runner';
import pg from 'pg';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const ADAPTERS = (process.env.BENCH_ADAPTERS ?? 'sqlite,postgres').split(',');
const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Concurrent executeAsync callers in the throughput scenarios. */
const PRODUCERS = 32;
const RUNNER_SETTINGS: DefaultRunnerConfig = {
  maxConcurrentTasks: 64,
  pollIntervalMs: 250,
  enableCronScheduling: false,
};

const single = defineWorkflow({ name: 'single', tasks: [{ id: 'only', run: (ctx) => void ctx.set('ok', true) }] });
const chain = defineWorkflow({
  name: 'chain10',
  tasks: Array.from({ length: 10 }, (_, i) => ({
    id: `step_${i}`,
    ...(i === 0 ? {} : { dependsOn: [`step_${i - 1}`] }),
    run: () => {},
  })),
});
const fanOut = defineWorkflow({
  name: 'fanout100',
  tasks: [
    { id: 'root', run: () => {} },
    ...Array.from({ length: 99 }, (_, i) => ({ id: `leaf_${i}`, dependsOn: ['root'], run: () => {} })),
  ],
});

interface Database {
  config: DefaultRunnerConfig;
  remove(): Promise<void>;
}

function sqliteDatabase(): Database {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-bench-'));
  return {
    config: { database: `sqlite:${join(dir, 'bench.db')}` },
    remove: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

function postgresDatabase(): Database {
  const schema = `orrery_bench_${randomBytes(4).toString('hex')}`;
  return {
    config: { database: POSTGRES_URL, schema },
    remove: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    },
  };
}

interface Measurement {
  adapter: string;
  scenario: string;
  pipelines: number;
  tasks: number;
  seconds: number;
  workflowsPerSecond: number;
  tasksPerSecond: number;
  p50Ms?: number;
  p99Ms?: number;
}

const seconds = (startMs: number) => (performance.now() - startMs) / 1000;

/**
 * Starts `count` pipelines with executeAsync, from {@link PRODUCERS} concurrent callers (as a
 * server taking requests would), then waits for all of them.
 */
async function throughput(runner: DefaultRunner, workflow: string, count: number, tasksEach: number) {
  const startMs = performance.now();
  const executions: PipelineExecution[] = [];
  let next = 0;
  const producer = async () => {
    while (next < count) {
      next += 1;
      executions.push(await runner.executeAsync(workflow, { i: next }));
    }
  };
  await Promise.all(Array.from({ length: PRODUCERS }, producer));
  const results = await Promise.all(executions.map((e) => e.wait()));
  const elapsed = seconds(startMs);
  const failed = results.filter((r) => r.status !== 'completed').length;
  if (failed > 0) throw new Error(`${failed} ${workflow} pipelines did not complete`);
  return { pipelines: count, tasks: count * tasksEach, seconds: elapsed };
}

async function latency(runner: DefaultRunner, count: number) {
  const samples: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const startMs = performance.now();
    await runner.execute('single', { i });
    samples.push(performance.now() - startMs);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { p50Ms: at(0.5), p99Ms: at(0.99), seconds: samples.reduce((a, b) => a + b, 0) / 1000 };
}

const quantile = (samples: number[], q: number) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

/** Pipelines the cross-process client starts per listen setting (the first 10 warm up and are not counted). */
const CROSS_PROCESS_COUNT = Math.max(20, Math.ceil(300 * SCALE));

/** `bench/cross-process-child.ts <args>` as a child process; resolves with the JSON lines it printed. */
function child(args: string[], env: Record<string, string>, onReady?: () => void) {
  const file = fileURLToPath(new URL('./cross-process-child.ts', import.meta.url));
  const process_ = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', file, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Record<string, unknown>[] = [];
  createInterface({ input: process_.stdout! }).on('line', (line) => {
    if (!line.startsWith('{')) return;
    const message = JSON.parse(line) as Record<string, unknown>;
    lines.push(message);
    if (message.ready === true) onReady?.();
  });
  const exited = once(process_, 'close').then(([code]) => {
    if (code !== 0 && code !== null) throw new Error(`cross-process-child ${args.join(' ')} exited with ${code}`);
    return lines;
  });
  return { process: process_, exited };
}

/** The cross-process scenario for one listen setting: a worker process, then a client process. */
async function crossProcess(database: Database, listen: 'on' | 'off'): Promise<Measurement[]> {
  const env = { ORRERY_DATABASE: String(database.config.database), ORRERY_SCHEMA: String(database.config.schema) };
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => {
    ready = resolve;
  });
  const worker = child(['worker', listen], env, ready);
  await Promise.race([isReady, worker.exited]);
  const client = child(['client', listen, String(CROSS_PROCESS_COUNT + 10)], env);
  const lines = await client.exited;
  worker.process.kill('SIGTERM');
  await worker.exited;
  const { startToTaskMs, startToDoneMs } = lines.find((line) => 'startToTaskMs' in line) as {
    startToTaskMs: number[];
    startToDoneMs: number[];
  };
  const out: Measurement[] = [];
  for (const [what, samples] of [
    ['task start', startToTaskMs.slice(10)],
    ['completion seen', startToDoneMs.slice(10)],
  ] as const) {
    const row: Measurement = {
      adapter: 'postgres',
      scenario: `x-process listen ${listen}: ${what}`,
      pipelines: samples.length,
      tasks: samples.length,
      seconds: samples.reduce((a, b) => a + b, 0) / 1000,
      workflowsPerSecond: samples.length / (samples.reduce((a, b) => a + b, 0) / 1000),
      tasksPerSecond: samples.length / (samples.reduce((a, b) => a + b, 0) / 1000),
      p50Ms: quantile(samples, 0.5),
      p99Ms: quantile(samples, 0.99),
    };
    out.push(row);
    console.log(
      `  postgres cross-process, listen ${listen}: start → ${what} p50 ${row.p50Ms!.toFixed(2)} ms, p99 ${row.p99Ms!.toFixed(2)} ms`,
    );
  }
  return out;
}

async function benchAdapter(adapter: string): Promise<Measurement[]> {
  const database = adapter === 'sqlite' ? sqliteDatabase() : postgresDatabase();
  const runner = await DefaultRunner.create({
    ...database.config,
    ...RUNNER_SETTINGS,
    workflows: [single, chain, fanOut],
  });
  await runner.start();
  const out: Measurement[] = [];
  const record = (scenario: string, m: { pipelines: number; tasks: number; seconds: number }, extra = {}) => {
    const row = {
      adapter,
      scenario,
      ...m,
      workflowsPerSecond: m.pipelines / m.seconds,
      tasksPerSecond: m.tasks / m.seconds,
      ...extra,
    };
    out.push(row);
    console.log(
      `  ${adapter.padEnd(8)} ${scenario.padEnd(22)} ${row.workflowsPerSecond.toFixed(0).padStart(7)} wf/s ${row.tasksPerSecond.toFixed(0).padStart(7)} tasks/s`,
    );
  };
  try {
    try {
      console.log(`${adapter}: warming up`);
      await throughput(runner, 'single', Math.ceil(500 * SCALE), 1);
      record('one-task workflows', await throughput(runner, 'single', Math.ceil(10_000 * SCALE), 1));
      record('10-task chain', await throughput(runner, 'chain10', Math.ceil(500 * SCALE), 10));
      record('100-task fan-out', await throughput(runner, 'fanout100', Math.ceil(50 * SCALE), 100));
      const n = Math.ceil(1000 * SCALE);
      const lat = await latency(runner, n);
      record(
        'execute() latency',
        { pipelines: n, tasks: n, seconds: lat.seconds },
        { p50Ms: lat.p50Ms, p99Ms: lat.p99Ms },
      );
      console.log(`  ${adapter.padEnd(8)} execute() p50 ${lat.p50Ms.toFixed(2)} ms, p99 ${lat.p99Ms.toFixed(2)} ms`);
    } finally {
      await runner.shutdown();
    }
    // After this process's runner shut down: only the two child processes use the schema.
    if (adapter === 'postgres')
      out.push(...(await crossProcess(database, 'on')), ...(await crossProcess(database, 'off')));
  } finally {
    await database.remove();
  }
  return out;
}

const results: Measurement[] = [];
for (const adapter of ADAPTERS) results.push(...(await benchAdapter(adapter)));

console.log(
  '\nadapter   scenario                                 pipelines    tasks   seconds    wf/s   tasks/s   p50 ms   p99 ms',
);
for (const r of results) {
  console.log(
    [
      r.adapter.padEnd(9),
      r.scenario.padEnd(38),
      String(r.pipelines).padStart(9),
      String(r.tasks).padStart(8),
      r.seconds.toFixed(2).padStart(9),
      r.workflowsPerSecond.toFixed(0).padStart(7),
      r.tasksPerSecond.toFixed(0).padStart(9),
      (r.p50Ms?.toFixed(2) ?? '').padStart(8),
      (r.p99Ms?.toFixed(2) ?? '').padStart(8),
    ].join(' '),
  );
}

const resultsDir = new URL('./results/', import.meta.url);
mkdirSync(resultsDir, { recursive: true });
// A run of some adapters only is written beside the full run of the day, not over it.
const only = process.env.BENCH_ADAPTERS === undefined ? '' : `-${ADAPTERS.join('-')}`;
const file = new URL(`runner-${new Date().toISOString().slice(0, 10)}${only}.json`, resultsDir);
const machine = { node: process.version, cpus: availableParallelism(), cpuModel: cpus()[0]?.model ?? 'unknown' };
writeFileSync(
  file,
  `${JSON.stringify({ date: new Date().toISOString(), machine, settings: RUNNER_SETTINGS, producers: PRODUCERS, scale: SCALE, results }, null, 2)}\n`,
);
console.log(`\nwrote ${file.pathname}`);
