/**
 * Several worker processes on one PostgreSQL: Orrery against graphile-worker with the same number
 * of processes (1, 2, 4), the peers harness's two throughput tests extended to a fleet (the
 * harness in ../shared/peers runs one process per test). In one run, alternating the systems:
 *
 * - split (processing-only): N one-task jobs written first (bulk: graphile-worker `addJobs`,
 *   Orrery `executeAsyncMany`, 500 a call), a CHECKPOINT, then P worker processes told to start at
 *   once: jobs/s from that instant to the observer seeing every job completed.
 * - e2e: P workers started and idle; N jobs enqueued by this process one call at a time, each
 *   awaited (graphile-worker `addJob`, Orrery `executeAsync` on a runner never started): jobs/s from
 *   the first call to the observer seeing every job completed. Wake-ups cross processes
 *   (graphile-worker's and Orrery's LISTEN/NOTIFY).
 *
 * Each worker process (bench/processes-worker.ts) runs 10 handlers with a pool of 12, the
 * systems' defaults otherwise, as in the peers harness. "Completed": graphile-worker's job row
 * deleted, Orrery's pipeline `completed`, read on a separate connection once the handlers
 * report N runs.
 *
 *   PEERS_PG_URL=postgres://postgres@127.0.0.1:55433/postgres PEERS_DIR=<folder with graphile-worker>
 *     npm run bench:processes
 *   knobs: BENCH_PROCESSES=1,2,4  BENCH_N=5000  BENCH_ROUNDS=2  BENCH_LABEL=name
 *
 * It drops and recreates the schemas procs_graphile and procs_orrery. Results are printed and
 * written to bench/results/processes-<date>[-label].json.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';
import pg from 'pg';

const DATABASE_URL = process.env.PEERS_PG_URL;
const PEERS_DIR = process.env.PEERS_DIR;
if (!DATABASE_URL || !PEERS_DIR) {
  throw new Error('set PEERS_PG_URL (a throwaway database) and PEERS_DIR (where graphile-worker is installed)');
}
const N = Number(process.env.BENCH_N ?? 5_000);
const PROCESSES = (process.env.BENCH_PROCESSES ?? '1,2,4').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CHUNK = 500;
const WORKER = fileURLToPath(new URL('./processes-worker.ts', import.meta.url));

type System = 'graphile' | 'orrery';
type Test = 'split' | 'e2e';
const schemaOf = (system: System) => `procs_${system}`;

const observer = new pg.Client({ connectionString: DATABASE_URL, user: 'postgres' });

function progress(what: string): void {
  process.stdout.write(`\r${what}`.padEnd(78));
}

/** The enqueue side of one system: opened on a fresh schema, one call per job or in bulk. */
interface Producer {
  one(i: number): Promise<unknown>;
  bulk(items: number[]): Promise<unknown>;
  close(): Promise<void>;
  remainingSql: string;
}

async function openProducer(system: System): Promise<Producer> {
  const schema = schemaOf(system);
  await observer.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  if (system === 'graphile') {
    const gw = createRequire(path.join(PEERS_DIR as string, 'package.json'))('graphile-worker');
    const utils = await gw.makeWorkerUtils({ connectionString: DATABASE_URL, schema });
    await utils.migrate();
    return {
      one: (i) => utils.addJob('peers_noop', { i }),
      bulk: (items) => utils.addJobs(items.map((i) => ({ identifier: 'peers_noop', payload: { i } }))),
      close: () => utils.release(),
      remainingSql: `select count(*)::int n from ${schema}._private_jobs`,
    };
  }
  // A runner never started claims nothing; its copy of the task must never run.
  const workflow = defineWorkflow({
    name: 'peers_noop',
    tasks: [{ id: 'noop', run: () => Promise.reject(new Error('the producer must not run tasks')) }],
  });
  const runner = await DefaultRunner.create({
    database: DATABASE_URL,
    schema,
    workflows: [workflow],
    enableCronScheduling: false,
  });
  return {
    one: (i) => runner.executeAsync('peers_noop', { i }),
    bulk: (items) => runner.executeAsyncMany(items.map((i) => ({ workflowName: 'peers_noop', context: { i } }))),
    close: () => runner.shutdown({ timeoutMs: 5_000 }),
    remainingSql: `select count(*)::int n from ${schema}.pipeline_executions where status <> 'completed'`,
  };
}

/** P worker processes, each loaded and waiting for `go`; `ran()` sums the handlers they ran. */
async function forkWorkers(system: System, count: number) {
  const ranBy = new Array<number>(count).fill(0);
  let onRan = () => {};
  const children: ChildProcess[] = [];
  await Promise.all(
    Array.from({ length: count }, (_, index) => {
      const child = fork(WORKER, [system, schemaOf(system)], { execArgv: ['--import', 'tsx', '--conditions=source'] });
      children.push(child);
      return new Promise<void>((ready, failed) => {
        child.once('exit', (code) => code !== 0 && failed(new Error(`${system} worker exited with ${code}`)));
        child.on('message', (message: { ready?: true; ran?: number }) => {
          if (message.ready) ready();
          if (message.ran !== undefined) {
            ranBy[index] = message.ran;
            onRan();
          }
        });
      });
    }),
  );
  const ran = () => ranBy.reduce((sum, n) => sum + n, 0);
  return {
    ran,
    /** Tells every process to start; resolves once all have started. */
    go: () =>
      Promise.all(
        children.map(
          (child) =>
            new Promise<void>((started) => {
              const listener = (message: { started?: true }) => {
                if (!message.started) return;
                child.off('message', listener);
                started();
              };
              child.on('message', listener);
              child.send({ go: true });
            }),
        ),
      ),
    /** Resolves when the handlers have run n times in all. */
    ranAtLeast: (n: number) =>
      new Promise<void>((reached) => {
        onRan = () => ran() >= n && reached();
        onRan();
      }),
    stop: () =>
      Promise.all(children.map((child) => new Promise((exited) => child.once('exit', exited).send({ stop: true })))),
  };
}

async function untilCompleted(producer: Producer): Promise<number> {
  for (;;) {
    const { rows } = await observer.query(producer.remainingSql);
    if (rows[0].n === 0) return performance.now();
  }
}

async function run(system: System, test: Test, processes: number): Promise<number> {
  const producer = await openProducer(system);
  const workers = await forkWorkers(system, processes);
  let jobsPerSecond: number;
  if (test === 'split') {
    for (let first = 0; first < N; first += CHUNK) {
      await producer.bulk(Array.from({ length: Math.min(CHUNK, N - first) }, (_, i) => first + i));
    }
    await observer.query('CHECKPOINT');
    const start = performance.now();
    await workers.go();
    await workers.ranAtLeast(N);
    jobsPerSecond = (N / ((await untilCompleted(producer)) - start)) * 1000;
  } else {
    await workers.go();
    await new Promise((resolve) => setTimeout(resolve, 500));
    await observer.query('CHECKPOINT');
    const start = performance.now();
    for (let i = 0; i < N; i += 1) {
      await producer.one(i);
      if (i % 250 === 0) progress(`${system} e2e ×${processes}: ${i}/${N} enqueued, ${workers.ran()} ran`);
    }
    await workers.ranAtLeast(N);
    jobsPerSecond = (N / ((await untilCompleted(producer)) - start)) * 1000;
  }
  await workers.stop();
  await producer.close();
  return Math.round(jobsPerSecond);
}

await observer.connect();
const lines: Array<{ round: number; processes: number; test: Test; system: System; jobsPerSecond: number }> = [];
for (let round = 1; round <= ROUNDS; round += 1) {
  // The systems alternate which goes first, round by round.
  const systems: System[] = round % 2 === 1 ? ['graphile', 'orrery'] : ['orrery', 'graphile'];
  for (const processes of PROCESSES) {
    for (const test of ['split', 'e2e'] as const) {
      for (const system of systems) {
        progress(`round ${round}: ${system} ${test} ×${processes}`);
        lines.push({ round, processes, test, system, jobsPerSecond: await run(system, test, processes) });
      }
    }
  }
}
await observer.end();
progress('');

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? Number.NaN;
console.log(`\n${N} jobs, ${ROUNDS} round(s), median jobs/s (all rounds' ratios in brackets)`);
console.log('| processes | test | graphile-worker | Orrery | Orrery ÷ graphile-worker |');
console.log('|---|---|---|---|---|');
for (const processes of PROCESSES) {
  for (const test of ['split', 'e2e'] as const) {
    const of = (system: System) =>
      lines
        .filter((l) => l.processes === processes && l.test === test && l.system === system)
        .map((l) => l.jobsPerSecond);
    const ratios = of('orrery').map((o, i) => (o / (of('graphile')[i] ?? Number.NaN)).toFixed(2));
    const row = [processes, test === 'split' ? 'processing' : 'e2e', median(of('graphile')), median(of('orrery'))];
    console.log(
      `| ${row.join(' | ')} | ${(median(of('orrery')) / median(of('graphile'))).toFixed(2)} (${ratios.join(', ')}) |`,
    );
  }
}
const label = process.env.BENCH_LABEL ? `-${process.env.BENCH_LABEL}` : '';
const file = new URL(`./results/processes-${new Date().toISOString().slice(0, 10)}${label}.json`, import.meta.url);
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(file, `${JSON.stringify({ n: N, rounds: ROUNDS, at: new Date().toISOString(), lines }, null, 2)}\n`);
console.log(`written to ${fileURLToPath(file)}`);
