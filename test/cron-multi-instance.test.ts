/**
 * Soak: runner processes sharing one database, killed with SIGKILL at random and restarted,
 * while many per-second schedules fire. Afterwards every occurrence of every schedule must have
 * exactly one `handed_off` ledger row and exactly one pipeline (guarantees 1 and 2), whatever
 * step each process was at when it died.
 *
 * The schedules are added before any runner starts, with an end: each one's expected slots are
 * every second of [nextRunAt at add, endAt). The runners start a few seconds after the first
 * slot, which stays on time (cronMisfireThresholdMs, 60 s, is the default), so every slot runs.
 *
 * The Postgres soak runs on a throwaway cluster of its own, so that besides the kills it can
 * terminate the runners' connections at random (pg_terminate_backend) and restart the whole
 * server once mid-run (`pg_ctl restart -m fast`); the shared test server is never touched.
 */
import { randomBytes } from 'node:crypto';
import type { Storage } from '@orreryjs/core';
import { openPostgresStorage } from '@orreryjs/postgres-adapter';
import { afterEach, describe, expect, it } from 'vitest';
import {
  addSchedules,
  auditLedger,
  isSettled,
  pendingWork,
  spawnWorker,
  sqliteTarget,
  type Target,
  wholeSecondIn,
} from './fixtures/cron-processes.js';
import { terminateBackends } from './support/backends.js';
import { freshSchemaName } from './support/postgres.js';
import { isAlive, sleep, stopWorker, until, type Worker } from './support/processes.js';
import { startThrowawayCluster, type ThrowawayCluster } from './support/throwaway-cluster.js';

/** Short thresholds, so that recovery happens many times within the soak. */
const SOAK_CONFIG = {
  cronPollIntervalMs: 200,
  cronLostThresholdMs: 2000,
  cronRecoveryIntervalMs: 500,
  // A row may be caught in a killed recovery more than three times in a minute of kills.
  cronMaxRecoveryAttempts: 10,
  pollIntervalMs: 100,
  taskLeaseMs: 2000,
};

/** Processes that exit before they are ready (a server down at their start) are restarted, up to this many times. */
const MAX_START_FAILURES = 30;

/** A fixed set of runner processes, each slot restarted after a kill. */
class Fleet {
  readonly workers: Worker[] = [];
  kills = 0;
  /** Processes that exited before they were ready (their database was unreachable at start) and were started again. */
  startFailures = 0;
  /** What each of those printed on stderr. */
  readonly startFailureLogs: string[] = [];
  readonly #env: Record<string, string>;
  readonly #killed = new WeakSet<Worker>();
  #stopping = false;

  constructor(size: number, env: Record<string, string>, config: Record<string, unknown> = {}) {
    this.#env = { ...env, ORRERY_RUNNER_CONFIG: JSON.stringify({ ...SOAK_CONFIG, ...config }) };
    for (let i = 0; i < size; i += 1) this.workers.push(this.#spawn(i));
  }

  #spawn(index: number): Worker {
    const worker = spawnWorker('cron-runner-worker.ts', [], this.#env);
    worker.ready.catch(() => {
      // Killed by us, or stopping: not a failed start.
      if (this.#killed.has(worker) || this.#stopping || this.workers[index] !== worker) return;
      this.startFailures += 1;
      this.startFailureLogs.push(worker.stderr());
      if (this.startFailures <= MAX_START_FAILURES) this.workers[index] = this.#spawn(index);
    });
    return worker;
  }

  /** Waits until every current process printed ready, following restarts of processes that failed to start. */
  async ready(): Promise<void> {
    for (;;) {
      const current = [...this.workers];
      const settled = await Promise.allSettled(current.map((worker) => worker.ready));
      const replaced = current.some((worker, i) => this.workers[i] !== worker);
      if (!replaced) {
        const failed = settled.find((result) => result.status === 'rejected');
        if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
        return;
      }
    }
  }

  /** SIGKILLs the process in slot `index` (started or not), waits for its death and starts a new one. */
  async killAndRestart(index: number): Promise<void> {
    const victim = this.workers[index]!;
    this.#killed.add(victim);
    await stopWorker(victim, 'SIGKILL');
    this.kills += 1;
    this.workers[index] = this.#spawn(index);
  }

  /** Stops every process gracefully; returns their exits. */
  stop(): Promise<Array<{ code: number | null; signal: NodeJS.Signals | null }>> {
    this.#stopping = true;
    return Promise.all(this.workers.map((worker) => stopWorker(worker, 'SIGTERM')));
  }

  /** Kills whatever is left (test clean-up). */
  async destroy(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.workers.filter(isAlive).map((worker) => stopWorker(worker, 'SIGKILL')));
  }

  stderr(): string {
    return this.workers.map((worker) => worker.stderr()).join('\n');
  }
}

/**
 * Trouble on the server besides the kills: the runners' connections terminated at random,
 * and the cluster restarted once, mid-run. Only ever on a throwaway cluster.
 */
interface ServerChaos {
  cluster: ThrowawayCluster;
  /** The runners' application_name, the prefix terminations match. */
  applicationName: string;
}

/** Until `untilMs` (performance.now()), terminates the runners' connections every 0.3–1.5 s, and restarts the cluster once at `restartAtMs`. */
async function runChaos(chaos: ServerChaos, restartAtMs: number, untilMs: number) {
  const counts = { terminated: 0, terminations: 0, restarts: 0 };
  while (performance.now() < untilMs) {
    await sleep(randomMs(300, 1500));
    if (counts.restarts === 0 && performance.now() >= restartAtMs) {
      await chaos.cluster.restart();
      counts.restarts += 1;
      continue;
    }
    // A termination that cannot connect (the server restarting) just skips its turn.
    const terminated = await terminateBackends(chaos.cluster.url, chaos.applicationName).catch(() => 0);
    counts.terminated += terminated;
    counts.terminations += 1;
  }
  return counts;
}

/** A fresh schema on a throwaway cluster the test owns, and the chaos it may cause there. */
async function throwawayPostgresTarget(): Promise<{ target: Target; chaos: ServerChaos }> {
  const cluster = await startThrowawayCluster();
  const schema = freshSchemaName();
  const target: Target = {
    env: { ORRERY_DATABASE: cluster.url, ORRERY_SCHEMA: schema },
    open: () => openPostgresStorage({ connectionString: cluster.url, schema }),
    remove: () => cluster.stop(),
  };
  return { target, chaos: { cluster, applicationName: `orrery-soak-${randomBytes(4).toString('hex')}` } };
}

const JITTER_MS = 900;

const randomMs = (min: number, max: number) => min + Math.floor(Math.random() * (max - min));

interface SoakOptions {
  name: string;
  target: Target;
  processes: number;
  schedules: number;
  /** Kill for at least this long, and at least until the schedules end. */
  killForMs: number;
  /** Waits until the process just restarted is ready before the next pause (single-process soak). */
  awaitRestart: boolean;
  /** Also terminate connections at random and restart the server once (Postgres on a throwaway cluster). */
  chaos?: ServerChaos;
}

describe('cron across runner processes killed with SIGKILL at random', () => {
  let fleet: Fleet | undefined;
  let target: Target | undefined;
  let storage: Storage | undefined;

  afterEach(async () => {
    await fleet?.destroy();
    fleet = undefined;
    await storage?.close();
    storage = undefined;
    await target?.remove();
    target = undefined;
  });

  async function soak(options: SoakOptions) {
    target = options.target;
    const endAt = wholeSecondIn(options.killForMs + 2000);
    // Odd schedules are handed off inside the claim transaction (DefaultRunner's in-transaction
    // handoff); even ones have jitter, so each occurrence waits up to JITTER_MS `claimed` in the
    // runner's memory and takes the two-phase path: a kill then leaves it to recovery. Every fifth
    // buffers its slots behind an unfinished pipeline (buffer_all): a kill may leave them `buffered`,
    // and they must still run exactly once, each with its own scheduled time.
    const schedules = await addSchedules(target, options.schedules, (i) => ({
      cronExpression: '* * * * * *',
      endAt,
      ...(i % 2 === 0 ? { jitterMs: JITTER_MS } : {}),
      ...(i % 5 === 4 ? { overlapPolicy: 'buffer_all' as const } : {}),
    }));
    storage = await target.open();
    const startedAt = performance.now();

    const { chaos } = options;
    fleet = new Fleet(options.processes, target.env, chaos ? { applicationName: chaos.applicationName } : {});
    await fleet.ready();
    const killUntil = Math.max(performance.now() + options.killForMs, endAt.getTime() - Date.now() + performance.now());
    const kills = async (running: Fleet) => {
      while (performance.now() < killUntil) {
        await sleep(randomMs(2000, 5000));
        const index = Math.floor(Math.random() * options.processes);
        await running.killAndRestart(index);
        if (options.awaitRestart) await running.workers[index]!.ready;
      }
    };
    const restartAt = performance.now() + options.killForMs / 2;
    const [, chaosCounts] = await Promise.all([
      kills(fleet),
      chaos ? runChaos(chaos, restartAt, killUntil) : undefined,
    ]);
    await fleet.ready();

    const ids = schedules.map((schedule) => schedule.id);
    await until('the ledger to settle', () => pendingWork(storage!, ids), isSettled, 90_000);
    // A process may fail to start while the server is away, but with a typed error, never an unhandled 'error' event.
    expect(fleet.startFailureLogs.filter((log) => /'error' event/.test(log))).toEqual([]);
    const exits = await fleet.stop();
    expect(exits, fleet.stderr()).toEqual(exits.map(() => ({ code: 0, signal: null })));

    const audit = await auditLedger(storage, schedules);
    const { problems, ...counts } = audit;
    console.log(
      `[cron soak ${options.name}] ${JSON.stringify({
        processes: options.processes,
        schedules: options.schedules,
        kills: fleet.kills,
        startFailures: fleet.startFailures,
        ...chaosCounts,
        ...counts,
        problems: problems.length,
        seconds: Math.round((performance.now() - startedAt) / 1000),
      })}`,
    );
    expect(problems.slice(0, 30), `${problems.length} problems`).toEqual([]);
    expect(audit.ledgerRows).toBe(audit.occurrences);
    expect(audit.pipelines).toBe(audit.occurrences);
    // The kills did leave occurrences `claimed`, and recovery handed them off.
    expect(audit.recovered).toBeGreaterThan(0);
    return { audit, kills: fleet.kills, chaos: chaosCounts };
  }

  it('postgres: 3 runners, one killed every 2–5 s for 60 s, connections dropped at random, the server restarted once; every second of 50 schedules runs exactly once', async () => {
    const throwaway = await throwawayPostgresTarget();
    const { audit, kills, chaos } = await soak({
      name: 'postgres',
      target: throwaway.target,
      processes: 3,
      schedules: 50,
      killForMs: 60_000,
      awaitRestart: false,
      chaos: throwaway.chaos,
    });
    expect(kills).toBeGreaterThanOrEqual(10);
    expect(chaos?.restarts).toBe(1);
    expect(chaos?.terminated).toBeGreaterThanOrEqual(10);
    expect(audit.occurrences).toBeGreaterThanOrEqual(50 * 55);
  }, 240_000);

  it('sqlite: 1 runner killed every 2–5 s and restarted for 30 s; every second of 20 schedules runs exactly once', async () => {
    const { audit, kills } = await soak({
      name: 'sqlite',
      target: sqliteTarget(),
      processes: 1,
      schedules: 20,
      killForMs: 30_000,
      awaitRestart: true,
    });
    expect(kills).toBeGreaterThanOrEqual(3);
    expect(audit.occurrences).toBeGreaterThanOrEqual(20 * 25);
  }, 150_000);
});
