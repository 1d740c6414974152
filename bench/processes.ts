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
 *   knobs: BENCH_PROCESSES=1,2,4  BENCH_N=5000  BENCH_ROUNDS=2  BENCH_SYSTEMS=graphile,orrery
 *          BENCH_TESTS=split,e2e  BENCH_LABEL=name  BENCH_CPU_PROF=<dir> (a CPU profile of each worker process)
 *
 * It drops and recreates the schemas procs_graphile and procs_orrery. Results are printed and
 * written to bench/results/processes-<date>[-label].json.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';
import pg from 'pg';
import { childExecArgv } from './child-process.js';

const DATABASE_URL = process.env.PEERS_PG_URL;
const PEERS_DIR = process.env.PEERS_DIR;
if (!DATABASE_URL || !PEERS_DIR) {
  throw new Error('set PEERS_PG_URL (a throwaway database) and PEERS_DIR (where graphile-worker is installed)');
}
const N = Number(process.env.BENCH_N ?? 5_000);
const PROCESSES = (process.env.BENCH_PROCESSES ?? '1,2,4').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SYSTEMS = (process.env.BENCH_SYSTEMS ?? 'graphile,orrery').split(',') as System[];
const TESTS = (process.env.BENCH_TESTS ?? 'split,e2e').split(',') as Test[];
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
  let cpuMs = 0;
  let onRan = () => {};
  const children: ChildProcess[] = [];
  await Promise.all(
    Array.from({ length: count }, (_, index) => {
      const child = fork(WORKER, [system, schemaOf(system)], {
        execArgv: childExecArgv(),
      });
      children.push(child);
      return new Promise<void>((ready, failed) => {
        child.once('exit', (code) => code !== 0 && failed(new Error(`${system} worker exited with ${code}`)));
        child.on('message', (message: { ready?: true; ran?: number; cpuMs?: number }) => {
          if (message.ready) ready();
          if (message.cpuMs !== undefined) cpuMs += message.cpuMs;
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
    /** Each process counts its CPU from now on rather than from `go`. */
    markCpu: () => {
      for (const child of children) child.send({ markCpu: true });
    },
    /** Resolves when the handlers have run n times in all. */
    ranAtLeast: (n: number) =>
      new Promise<void>((reached) => {
        onRan = () => ran() >= n && reached();
        onRan();
      }),
    /** Stops every process; resolves with the CPU milliseconds they used from `go` on. */
    stop: async () => {
      await Promise.all(
        children.map((child) => new Promise((exited) => child.once('exit', exited).send({ stop: true }))),
      );
      return cpuMs;
    },
  };
}

const CLOCK_TICKS_PER_SECOND = 100;
let postmasterPid: number | undefined;

/** CPU milliseconds used so far by the (local) Postgres server's processes: the postmaster's children alive now. */
function postgresCpuMs(): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ');
      if (Number(fields[1]) === postmasterPid) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
}

async function untilCompleted(producer: Producer): Promise<number> {
  for (;;) {
    const { rows } = await observer.query(producer.remainingSql);
    if (rows[0].n === 0) return performance.now();
  }
}

/** One test: jobs/s, and CPU milliseconds per job of the worker processes, this process (the producer) and Postgres. */
async function run(system: System, test: Test, processes: number) {
  const producer = await openProducer(system);
  const workers = await forkWorkers(system, processes);
  if (test === 'split') {
    for (let first = 0; first < N; first += CHUNK) {
      await producer.bulk(Array.from({ length: Math.min(CHUNK, N - first) }, (_, i) => first + i));
    }
  } else {
    await workers.go();
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  await observer.query('CHECKPOINT');
  // The measured window, for the rate and every CPU figure: from here to every job seen completed.
  const start = performance.now();
  const producerCpu = process.cpuUsage();
  const postgresCpu = postgresCpuMs();
  if (test === 'split') {
    await workers.go();
  } else {
    workers.markCpu();
    for (let i = 0; i < N; i += 1) {
      await producer.one(i);
      if (i % 250 === 0) progress(`${system} e2e ×${processes}: ${i}/${N} enqueued, ${workers.ran()} ran`);
    }
  }
  await workers.ranAtLeast(N);
  const jobsPerSecond = (N / ((await untilCompleted(producer)) - start)) * 1000;
  // Postgres backends of the workers exit with them: read the server's CPU first.
  const postgresMs = postgresCpuMs() - postgresCpu;
  const cpu = process.cpuUsage(producerCpu);
  const workerMs = await workers.stop();
  await producer.close();
  const perJob = (ms: number) => Math.round((ms / N) * 1000) / 1000;
  return {
    jobsPerSecond: Math.round(jobsPerSecond),
    cpuMsPerJob: {
      workers: perJob(workerMs),
      producer: perJob((cpu.user + cpu.system) / 1000),
      postgres: perJob(postgresMs),
    },
  };
}

await observer.connect();
{
  const { rows } = await observer.query('select pg_backend_pid() pid');
  postmasterPid = Number(readFileSync(`/proc/${rows[0].pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
}
const lines: Array<{ round: number; processes: number; test: Test; system: System } & Awaited<ReturnType<typeof run>>> =
  [];
for (let round = 1; round <= ROUNDS; round += 1) {
  // The systems alternate which goes first, round by round.
  const systems = round % 2 === 1 ? SYSTEMS : [...SYSTEMS].reverse();
  for (const processes of PROCESSES) {
    for (const test of TESTS) {
      for (const system of systems) {
        progress(`round ${round}: ${system} ${test} ×${processes}`);
        lines.push({ round, processes, test, system, ...(await run(system, test, processes)) });
      }
    }
  }
}
await observer.end();
progress('');

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle)
    ? ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2
    : sorted[Math.floor(middle)]!;
}
const cpuText = (ms: { workers: number; producer: number; postgres: number }) =>
  `${(ms.workers + ms.producer + ms.postgres).toFixed(2)} (${ms.workers.toFixed(2)} / ${ms.producer.toFixed(2)} / ${ms.postgres.toFixed(2)})`;
console.log(`\n${N} jobs, ${ROUNDS} round(s): median jobs/s, each round's ratio in brackets; CPU ms per job, median:`);
console.log('all (worker processes / producer / Postgres)');
console.log(
  '| processes | test | graphile-worker | Orrery | Orrery ÷ graphile-worker | CPU graphile-worker | CPU Orrery |',
);
console.log('|---|---|---|---|---|---|---|');
for (const processes of PROCESSES) {
  for (const test of TESTS) {
    const of = (system: System) =>
      lines.filter((l) => l.processes === processes && l.test === test && l.system === system);
    const rate = (system: System) => median(of(system).map((l) => l.jobsPerSecond));
    const cpu = (system: System) => {
      const runs = of(system).map((l) => l.cpuMsPerJob);
      return cpuText({
        workers: median(runs.map((c) => c.workers)),
        producer: median(runs.map((c) => c.producer)),
        postgres: median(runs.map((c) => c.postgres)),
      });
    };
    const graphileRates = of('graphile').map((l) => l.jobsPerSecond);
    const ratios = of('orrery').map((l, i) => (l.jobsPerSecond / (graphileRates[i] ?? Number.NaN)).toFixed(2));
    const ratio = (rate('orrery') / rate('graphile')).toFixed(2);
    const cells = [processes, test === 'split' ? 'processing' : 'e2e', rate('graphile'), rate('orrery')];
    console.log(`| ${cells.join(' | ')} | ${ratio} (${ratios.join(', ')}) | ${cpu('graphile')} | ${cpu('orrery')} |`);
  }
}
const label = process.env.BENCH_LABEL ? `-${process.env.BENCH_LABEL}` : '';
const file = new URL(`./results/processes-${new Date().toISOString().slice(0, 10)}${label}.json`, import.meta.url);
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(file, `${JSON.stringify({ n: N, rounds: ROUNDS, at: new Date().toISOString(), lines }, null, 2)}\n`);
console.log(`written to ${fileURLToPath(file)}`);
