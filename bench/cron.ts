/**
 * Cron scheduler throughput and cost, through a real database.
 *
 *   npm run bench:cron                      # SQLite and PostgreSQL
 *   BENCH_ADAPTERS=sqlite npm run bench:cron
 *   BENCH_SCALE=0.2 npm run bench:cron      # fewer schedules, for a quick look
 *
 * Scenarios: occurrences handed off per second when many schedules are due at once, through
 * the scheduler alone (CronService with the cron tests' StorageExecutor, a generic executor
 * writing each pipeline through the adapter: two-phase; and with an in-transaction handoff
 * building the same one-task pipeline, as a DefaultRunner does) and through real DefaultRunners (in-transaction
 * handoff, task loops running the pipelines too; 1 and 2 instances in this process on PostgreSQL,
 * and 1 and 2 runner processes of their own, bench/cron-runner-child.ts); the cost of
 * an idle tick with 100,000 enabled schedules none of which is due (and 1,000,000 on
 * PostgreSQL, inserted through the sync's bulk path); the fire lag at a steady rate on the wall
 * clock, two-phase at 100 occurrences/s (to the hand-off) and a DefaultRunner at 1,000
 * occurrences/s, both to the hand-off (handedOffAt − scheduledTime) and to the task's start
 * (when its `run` is called − scheduledTime). Due schedules are created with the sync's bulk path.
 *
 *   BENCH_SCENARIOS=runner-1x,runner-lag npm run bench:cron   # some scenarios only
 *
 * Scenario keys: two-phase, in-transaction, runner-1x, runner-2x, runner-1p, runner-2p (the last
 * three PostgreSQL), idle,
 * idle-million (PostgreSQL), lag, runner-lag.
 * BENCH_CPU_PROF=<dir> writes a CPU profile of each runner process of runner-1p and runner-2p there.
 * PostgreSQL comes from TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test; each
 * run uses a fresh schema and drops it. Results are printed as a table and written to
 * bench/results/cron-<date>.json.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type Clock,
  ManualClock,
  newId,
  type OverlapPolicy,
  type ScheduleRow,
  type Storage,
  silentLogger,
  systemClock,
} from '@orreryjs/core';
import {
  CRON_DEFAULTS,
  type CronEvents,
  CronService,
  type CronSettings,
  type InTransactionHandoff,
} from '@orreryjs/cron';
import { openPostgresStorage } from '@orreryjs/postgres-adapter';
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';
import pg from 'pg';
import { StorageExecutor } from '../packages/cron/test/support/storage-executor.js';
import { childExecArgv } from './child-process.js';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const ADAPTERS = (process.env.BENCH_ADAPTERS ?? 'sqlite,postgres').split(',');
const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const T0 = new Date('2026-01-01T00:00:00.000Z');
const WORKFLOW = 'bench';

const DUE_SCHEDULES = Math.ceil(20_000 * SCALE);
const IDLE_SCHEDULES = Math.ceil(100_000 * SCALE);
const MILLION_SCHEDULES = Math.ceil(1_000_000 * SCALE);
/** Schedules per applyScheduleSync call when filling the idle scenarios (one transaction each). */
const IDLE_INSERT_CHUNK = 50_000;
const SCENARIOS = process.env.BENCH_SCENARIOS?.split(',');
const IDLE_TICKS = Math.ceil(2_000 * SCALE);
const LAG_SCHEDULES = 100;
const LAG_SECONDS = Math.max(3, Math.ceil(10 * SCALE));
const LAG_RATE = Math.ceil(1_000 * Math.min(1, SCALE * 4));

/** Where a DefaultRunner finds a bench database. */
interface RunnerTarget {
  database: string;
  schema?: string;
}

interface Database {
  storage: Storage;
  target: RunnerTarget;
  remove(): Promise<void>;
}

async function openDatabase(adapter: string): Promise<Database> {
  if (adapter === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-bench-cron-'));
    const filename = join(dir, 'bench.db');
    const storage = await openSqliteStorage({ filename });
    return {
      storage,
      target: { database: `sqlite:${filename}` },
      remove: async () => {
        await storage.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const schema = `orrery_bench_${randomBytes(4).toString('hex')}`;
  const storage = await openPostgresStorage({ connectionString: POSTGRES_URL, schema });
  return {
    storage,
    target: { database: POSTGRES_URL, schema },
    remove: async () => {
      await storage.close();
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    },
  };
}

/**
 * The in-transaction handoff a DefaultRunner offers, reduced to building the rows of a
 * one-task pipeline: what the scheduler commits per occurrence when it owns the database.
 */
const benchInTransactionHandoff: InTransactionHandoff = {
  preparePipeline: (occurrence, now) => ({
    id: newId(),
    workflowName: occurrence.workflowName,
    workflowVersion: 'bench',
    input: occurrence.context,
    idempotencyKey: occurrence.id,
    scheduledTime: occurrence.scheduledTime,
    now,
    tasks: [{ id: newId(), taskId: 'noop', position: 0, pendingDeps: 0 }],
  }),
  handedOff: () => {},
  cancelled: async () => {},
};

type HandoffPath = 'two-phase' | 'in-transaction';

function cronOn(
  storage: Storage,
  clock: Clock,
  settings: Partial<CronSettings> = {},
  onFired?: (lagMs: number) => void,
  path: HandoffPath = 'two-phase',
) {
  const executor = new StorageExecutor(storage, clock);
  const cron = new CronService({
    ...(path === 'in-transaction' ? { inTransactionHandoff: benchInTransactionHandoff } : {}),
    store: storage.cron,
    executor,
    clock,
    logger: silentLogger,
    runnerId: 'bench',
    settings: { ...CRON_DEFAULTS, ...settings },
    workflows: { has: (name) => name === WORKFLOW, names: () => [WORKFLOW] },
    emit: (event: keyof CronEvents, ...args) => {
      if (event === 'cron:fired') onFired?.((args[0] as CronEvents['cron:fired'][0]).lagMs);
    },
  });
  return cron;
}

function progress(label: string, done: number, total: number) {
  if (done === total || done % Math.max(1, Math.floor(total / 10)) === 0) {
    process.stdout.write(`\r    ${label}: ${done}/${total}`);
    if (done === total) process.stdout.write('\n');
  }
}

const percentile = (sorted: readonly number[], q: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/** Count, rate and mean/p50/p99 of the lags of a LAG_SECONDS run. */
function lagFigures(
  lags: number[],
): Pick<Measurement, 'count' | 'seconds' | 'perSecond' | 'meanMs' | 'p50Ms' | 'p99Ms'> {
  const sorted = [...lags].sort((a, b) => a - b);
  return {
    count: sorted.length,
    seconds: LAG_SECONDS,
    perSecond: sorted.length / LAG_SECONDS,
    meanMs: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
  };
}

interface Measurement {
  adapter: string;
  scenario: string;
  count: number;
  seconds: number;
  perSecond?: number;
  meanMs?: number;
  p50Ms?: number;
  p99Ms?: number;
  settings?: Partial<CronSettings> | { firedPerProcess: number[]; coresBusy: number };
}

/** The due scenarios' schedules: every minute, so all of them are due one minute after T0. */
function dueScheduleInputs() {
  return Array.from({ length: DUE_SCHEDULES }, (_, i) => ({
    name: `due-${i}`,
    workflowName: WORKFLOW,
    cronExpression: '* * * * *',
  }));
}

/** Many schedules due at the same instant: ticks back to back until every occurrence is handed off. */
async function dueThroughput(adapter: string, storage: Storage, path: HandoffPath): Promise<Measurement> {
  const clock = new ManualClock(T0);
  const cron = cronOn(storage, clock, {}, undefined, path);
  await cron.syncSchedules(dueScheduleInputs());
  clock.set(new Date(T0.getTime() + 60_000));
  const startMs = performance.now();
  let handedOff = 0;
  let ticks = 0;
  while (handedOff < DUE_SCHEDULES) {
    const result = await cron.tick();
    if (result.claimed === 0) throw new Error(`tick ${ticks} claimed nothing with ${DUE_SCHEDULES - handedOff} left`);
    handedOff += result.handedOff;
    ticks += 1;
    progress('handing off', handedOff, DUE_SCHEDULES);
  }
  const seconds = (performance.now() - startMs) / 1000;
  const pipelines = await storage.executions.listPipelines({ limit: DUE_SCHEDULES + 1, offset: 0 });
  if (pipelines.length !== DUE_SCHEDULES)
    throw new Error(`expected ${DUE_SCHEDULES} pipelines, got ${pipelines.length}`);
  return {
    adapter,
    scenario: `${path} handoff, ${DUE_SCHEDULES} due`,
    count: DUE_SCHEDULES,
    seconds,
    perSecond: DUE_SCHEDULES / seconds,
    settings: { batchSize: CRON_DEFAULTS.batchSize, maxOccurrencesPerTick: CRON_DEFAULTS.maxOccurrencesPerTick },
  };
}

/**
 * Many schedules due at once, fired by real DefaultRunners (in-transaction handoff) while
 * their task loops run the pipelines too: the end-to-end figure a user sees. Several
 * instances run in this one process, each with its own connections.
 */
async function runnerDueThroughput(adapter: string, target: RunnerTarget, instances: number): Promise<Measurement> {
  const clock = new ManualClock(T0);
  const workflow = defineWorkflow({ name: WORKFLOW, tasks: [{ id: 'noop', run: () => {} }] });
  const runners = await Promise.all(
    Array.from({ length: instances }, (_, i) =>
      DefaultRunner.create({
        ...target,
        workflows: [workflow],
        clock,
        runnerId: `bench-${i}`,
        cronEnableRecovery: false,
      }),
    ),
  );
  await runners[0]!.syncCronSchedules(dueScheduleInputs());
  let fired = 0;
  let done!: () => void;
  const allFired = new Promise<void>((resolve) => {
    done = resolve;
  });
  for (const runner of runners) {
    runner.on('cron:fired', () => {
      fired += 1;
      progress(`handing off (${instances} instance${instances > 1 ? 's' : ''})`, fired, DUE_SCHEDULES);
      if (fired === DUE_SCHEDULES) done();
    });
  }
  clock.set(new Date(T0.getTime() + 60_000));
  const startMs = performance.now();
  await Promise.all(runners.map((runner) => runner.start()));
  await allFired;
  const seconds = (performance.now() - startMs) / 1000;
  await Promise.all(runners.map((runner) => runner.shutdown({ timeoutMs: 10_000 })));
  return {
    adapter,
    scenario: `runner handoff, ${DUE_SCHEDULES} due, ${instances}x`,
    count: DUE_SCHEDULES,
    seconds,
    perSecond: DUE_SCHEDULES / seconds,
  };
}

/** The child of the separate-process scenarios. */
const RUNNER_CHILD = fileURLToPath(new URL('./cron-runner-child.ts', import.meta.url));
/** How long before their due instant the separate-process scenarios write the schedules. */
const PROCESS_LEAD_MS = 2_000;

/** The machine's CPU time so far, busy and in all, in clock ticks (/proc/stat's first line). */
function machineCpuTicks(): { busy: number; total: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const ticks = fields.map(Number);
  const total = ticks.reduce((sum, n) => sum + n, 0);
  // idle and iowait
  return { busy: total - ticks[3]! - ticks[4]!, total };
}

/** A forked runner process (bench/cron-runner-child.ts), started and ready; `onFired` hears its count so far. */
async function forkRunner(target: RunnerTarget, runnerId: string, onFired: (fired: number, atMs: number) => void) {
  const child = fork(RUNNER_CHILD, [runnerId], {
    execArgv: childExecArgv(),
    env: { ...process.env, ORRERY_DATABASE: target.database, ORRERY_SCHEMA: target.schema },
  });
  await new Promise<void>((ready, failed) => {
    child.once('exit', (code) => failed(new Error(`runner ${runnerId} exited with ${code} before it was ready`)));
    child.once('message', () => ready());
  });
  child.removeAllListeners('exit');
  child.on('message', (message: { fired: number; atMs: number }) => onFired(message.fired, message.atMs));
  return {
    /** Shuts the runner down. */
    stop: () => new Promise<void>((resolve) => child.once('exit', () => resolve()).send('stop')),
  };
}

/**
 * Many schedules due at one instant, fired by `processes` DefaultRunners each in a Node process
 * of its own (as runners are deployed), while their task loops run the pipelines too. runner-2x
 * shares one event loop between its runners and cannot show them scaling. The schedules are
 * written PROCESS_LEAD_MS before they are due, so every runner's look-ahead knows the instant; the
 * time is from that instant to the last hand-off, as the runner processes report it.
 */
async function runnerProcessesThroughput(adapter: string, { storage, target }: Database, processes: number) {
  const firedBy = new Array<number>(processes).fill(0);
  let lastFiredAtMs = 0;
  let done!: () => void;
  const allFired = new Promise<void>((resolve) => {
    done = resolve;
  });
  const runners = await Promise.all(
    Array.from({ length: processes }, (_, i) =>
      forkRunner(target, `bench-process-${i}`, (fired, atMs) => {
        firedBy[i] = fired;
        lastFiredAtMs = Math.max(lastFiredAtMs, atMs);
        const total = firedBy.reduce((sum, n) => sum + n, 0);
        progress(`handing off (${processes} process${processes > 1 ? 'es' : ''})`, total, DUE_SCHEDULES);
        if (total === DUE_SCHEDULES) done();
      }),
    ),
  );
  const dueAt = new Date(Date.now() + PROCESS_LEAD_MS);
  let cpuAtDue = machineCpuTicks();
  setTimeout(() => {
    cpuAtDue = machineCpuTicks();
  }, PROCESS_LEAD_MS);
  const inserts = Array.from({ length: DUE_SCHEDULES }, (_, i) => yearlyRow(`due-${i}`, dueAt));
  if (!(await storage.cron.applyScheduleSync({ inserts, updates: [], deletes: [] })))
    throw new Error('the due schedules could not be inserted');
  await allFired;
  const cpu = machineCpuTicks();
  await Promise.all(runners.map((runner) => runner.stop()));
  const seconds = (lastFiredAtMs - dueAt.getTime()) / 1000;
  // How much of the machine the runners, Postgres and this bench used meanwhile: near every core, more processes cannot go faster.
  const coresBusy = ((cpu.busy - cpuAtDue.busy) / (cpu.total - cpuAtDue.total)) * availableParallelism();
  return {
    adapter,
    scenario: `runner handoff, ${DUE_SCHEDULES} due, ${processes} process${processes > 1 ? 'es' : ''}`,
    count: DUE_SCHEDULES,
    seconds,
    perSecond: DUE_SCHEDULES / seconds,
    settings: { firedPerProcess: firedBy, coresBusy },
  };
}

/**
 * Fire lag of a real DefaultRunner at a steady LAG_RATE occurrences per second on the wall
 * clock: to the hand-off (the ledger's handedOffAt) and to the task's start (its `run` called).
 */
async function runnerFireLag(adapter: string, target: RunnerTarget): Promise<Measurement[]> {
  const startLags: number[] = [];
  const workflow = defineWorkflow({
    name: WORKFLOW,
    tasks: [
      {
        id: 'noop',
        run: (_ctx, info) => {
          if (info.scheduledTime !== undefined) startLags.push(Date.now() - info.scheduledTime.getTime());
        },
      },
    ],
  });
  const runner = await DefaultRunner.create({ ...target, workflows: [workflow], cronEnableRecovery: false });
  await runner.syncCronSchedules(
    Array.from({ length: LAG_RATE }, (_, i) => ({
      name: `lag-${i}`,
      workflowName: WORKFLOW,
      cronExpression: '* * * * * *',
    })),
  );
  const lags: number[] = [];
  runner.on('cron:fired', (event) => lags.push(event.lagMs));
  await runner.start();
  for (let s = 1; s <= LAG_SECONDS; s += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    progress(`runner at ${LAG_RATE} occ/s, poll ${CRON_DEFAULTS.pollIntervalMs} ms`, s, LAG_SECONDS);
  }
  await runner.shutdown({ timeoutMs: 10_000 });
  const settings = { pollIntervalMs: CRON_DEFAULTS.pollIntervalMs };
  return [
    { adapter, scenario: `runner fire lag, ${LAG_RATE} occ/s`, ...lagFigures(lags), settings },
    { adapter, scenario: `runner start lag, ${LAG_RATE} occ/s`, ...lagFigures(startLags), settings },
  ];
}

/**
 * A yearly schedule's row whose next run is `nextRunAt`, for the port's bulk path (a sync's
 * inserts): the scenarios that use it measure ticks, not validations. A tick takes `nextRunAt` as
 * the slot due, whatever the expression, and moves on to next year.
 */
function yearlyRow(name: string, nextRunAt: Date, overlapPolicy: OverlapPolicy = 'allow'): ScheduleRow {
  return {
    id: newId(),
    name,
    workflowName: WORKFLOW,
    cronExpression: '0 0 0 1 1 *',
    timezone: 'UTC',
    enabled: true,
    context: {},
    catchupPolicy: 'run_once',
    overlapPolicy,
    jitterMs: 0,
    pauseOnFailure: false,
    enabledAt: T0,
    maxRuns: null,
    runCount: 0,
    dst: null,
    note: null,
    startAt: null,
    endAt: null,
    nextRunAt,
    lastRunAt: null,
    version: 1,
    createdAt: T0,
    updatedAt: T0,
  };
}

/** An idle tick's cost with `count` enabled schedules, none due. */
async function idleTick(adapter: string, storage: Storage, count: number): Promise<Measurement> {
  const clock = new ManualClock(T0);
  const cron = cronOn(storage, clock);
  const nextYear = new Date('2027-01-01T00:00:00.000Z');
  for (let start = 0; start < count; start += IDLE_INSERT_CHUNK) {
    const inserts = Array.from({ length: Math.min(IDLE_INSERT_CHUNK, count - start) }, (_, i) =>
      yearlyRow(`idle-${start + i}`, nextYear, (start + i) % 2 === 0 ? 'allow' : 'skip'),
    );
    if (!(await storage.cron.applyScheduleSync({ inserts, updates: [], deletes: [] })))
      throw new Error('the idle schedules could not be inserted');
    progress('inserting idle schedules', start + inserts.length, count);
  }
  for (let i = 0; i < 50; i += 1) await cron.tick();
  const samples: number[] = [];
  for (let i = 0; i < IDLE_TICKS; i += 1) {
    clock.advance(1000);
    const startMs = performance.now();
    const result = await cron.tick();
    samples.push(performance.now() - startMs);
    if (result.claimed !== 0) throw new Error('an idle tick claimed something');
  }
  const total = samples.reduce((a, b) => a + b, 0);
  samples.sort((a, b) => a - b);
  return {
    adapter,
    scenario: `idle tick, ${count} schedules`,
    count: IDLE_TICKS,
    seconds: total / 1000,
    meanMs: total / IDLE_TICKS,
    p50Ms: percentile(samples, 0.5),
    p99Ms: percentile(samples, 0.99),
  };
}

/** Lag between scheduled time and handoff at a steady rate, on the wall clock with the real loop. */
async function fireLag(adapter: string, storage: Storage, pollIntervalMs: number): Promise<Measurement> {
  const lags: number[] = [];
  const cron = cronOn(storage, systemClock, { pollIntervalMs }, (lagMs) => lags.push(lagMs));
  for (let i = 0; i < LAG_SCHEDULES; i += 1) {
    await cron.addSchedule({
      name: `lag-${pollIntervalMs}-${i}`,
      workflowName: WORKFLOW,
      cronExpression: '* * * * * *',
    });
  }
  cron.start();
  for (let s = 1; s <= LAG_SECONDS; s += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    progress(`steady ${LAG_SCHEDULES} occ/s, poll ${pollIntervalMs} ms`, s, LAG_SECONDS);
  }
  await cron.stop();
  for (const schedule of await cron.listSchedules()) {
    if (schedule.name?.startsWith('lag-')) await cron.deleteSchedule(schedule.id);
  }
  return {
    adapter,
    scenario: `fire lag, poll ${pollIntervalMs} ms`,
    ...lagFigures(lags),
    settings: { pollIntervalMs },
  };
}

function print(m: Measurement) {
  const rate = m.perSecond === undefined ? '' : `${m.perSecond.toFixed(0)} /s`;
  const timing =
    m.meanMs === undefined
      ? ''
      : `mean ${m.meanMs.toFixed(3)} ms, p50 ${m.p50Ms?.toFixed(3)} ms, p99 ${m.p99Ms?.toFixed(3)} ms`;
  const busy =
    m.settings !== undefined && 'coresBusy' in m.settings ? `${m.settings.coresBusy.toFixed(2)} cores busy` : '';
  console.log(`  ${m.adapter.padEnd(8)} ${m.scenario.padEnd(32)} ${rate.padStart(10)} ${timing}${busy}`);
}

async function benchAdapter(adapter: string): Promise<Measurement[]> {
  const out: Measurement[] = [];
  const postgresOnly = adapter === 'postgres';
  type Scenario = [key: string, run: (database: Database) => Promise<Measurement | Measurement[]>];
  const all: (Scenario | false)[] = [
    ['two-phase', ({ storage }) => dueThroughput(adapter, storage, 'two-phase')],
    ['in-transaction', ({ storage }) => dueThroughput(adapter, storage, 'in-transaction')],
    ['runner-1x', ({ target }) => runnerDueThroughput(adapter, target, 1)],
    postgresOnly && ['runner-2x', ({ target }) => runnerDueThroughput(adapter, target, 2)],
    postgresOnly && ['runner-1p', (database) => runnerProcessesThroughput(adapter, database, 1)],
    postgresOnly && ['runner-2p', (database) => runnerProcessesThroughput(adapter, database, 2)],
    ['idle', ({ storage }) => idleTick(adapter, storage, IDLE_SCHEDULES)],
    postgresOnly && ['idle-million', ({ storage }) => idleTick(adapter, storage, MILLION_SCHEDULES)],
    ['lag', ({ storage }) => fireLag(adapter, storage, CRON_DEFAULTS.pollIntervalMs)],
    ['runner-lag', ({ target }) => runnerFireLag(adapter, target)],
  ];
  const scenarios = all.filter((scenario): scenario is Scenario => scenario !== false);
  console.log(`${adapter}:`);
  for (const [key, scenario] of scenarios) {
    if (SCENARIOS !== undefined && !SCENARIOS.includes(key)) continue;
    const database = await openDatabase(adapter);
    try {
      for (const measurement of [await scenario(database)].flat()) {
        print(measurement);
        out.push(measurement);
      }
    } finally {
      await database.remove();
    }
  }
  return out;
}

const results: Measurement[] = [];
for (const adapter of ADAPTERS) results.push(...(await benchAdapter(adapter)));

console.log('\nadapter   scenario                           count   seconds       /s    mean ms     p50 ms     p99 ms');
for (const r of results) {
  console.log(
    [
      r.adapter.padEnd(9),
      r.scenario.padEnd(32),
      String(r.count).padStart(7),
      r.seconds.toFixed(2).padStart(9),
      (r.perSecond?.toFixed(0) ?? '').padStart(8),
      (r.meanMs?.toFixed(3) ?? '').padStart(10),
      (r.p50Ms?.toFixed(3) ?? '').padStart(10),
      (r.p99Ms?.toFixed(3) ?? '').padStart(10),
    ].join(' '),
  );
}

const resultsDir = new URL('./results/', import.meta.url);
mkdirSync(resultsDir, { recursive: true });
const file = new URL(
  `cron-${new Date().toISOString().slice(0, 10)}${process.env.BENCH_LABEL ? `-${process.env.BENCH_LABEL}` : ''}.json`,
  resultsDir,
);
const machine = { node: process.version, cpus: availableParallelism(), cpuModel: cpus()[0]?.model ?? 'unknown' };
const load = loadavg().map((x) => Number(x.toFixed(2)));
writeFileSync(
  file,
  `${JSON.stringify({ date: new Date().toISOString(), machine, load, scale: SCALE, defaults: CRON_DEFAULTS, results }, null, 2)}\n`,
);
console.log(`\nwrote ${file.pathname}`);
