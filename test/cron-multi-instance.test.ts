/**
 * Soak: runner processes sharing one database, killed with SIGKILL at random and restarted,
 * while many per-second schedules fire. Afterwards every occurrence of every schedule must have
 * exactly one `handed_off` ledger row and exactly one pipeline (guarantees 1 and 2), whatever
 * step each process was at when it died.
 *
 * The schedules are added before any runner starts, with an end: each one's expected slots are
 * every second of [nextRunAt at add, endAt). The runners start a few seconds after the first
 * slot, which stays on time (cronMisfireThresholdMs, 60 s, is the default), so every slot runs.
 */
import type { Storage } from '@orreryjs/core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  addSchedules,
  auditLedger,
  isSettled,
  pendingWork,
  postgresTarget,
  spawnWorker,
  sqliteTarget,
  type Target,
  wholeSecondIn,
} from './fixtures/cron-processes.js';
import { isAlive, sleep, stopWorker, until, type Worker } from './support/processes.js';

/** Short thresholds, so that recovery happens many times within the soak. */
const SOAK_CONFIG = JSON.stringify({
  cronPollIntervalMs: 200,
  cronLostThresholdMs: 2000,
  cronRecoveryIntervalMs: 500,
  // A row may be caught in a killed recovery more than three times in a minute of kills.
  cronMaxRecoveryAttempts: 10,
  pollIntervalMs: 100,
  taskLeaseMs: 2000,
});

/** A fixed set of runner processes, each slot restarted after a kill. */
class Fleet {
  readonly workers: Worker[] = [];
  kills = 0;
  readonly #env: Record<string, string>;

  constructor(size: number, env: Record<string, string>) {
    this.#env = { ...env, ORRERY_RUNNER_CONFIG: SOAK_CONFIG };
    for (let i = 0; i < size; i += 1) this.workers.push(this.#spawn());
  }

  #spawn(): Worker {
    return spawnWorker('cron-runner-worker.ts', [], this.#env);
  }

  /** Waits until every current process printed ready. */
  async ready(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.ready));
  }

  /** SIGKILLs the process in slot `index` (started or not), waits for its death and starts a new one. */
  async killAndRestart(index: number): Promise<void> {
    const victim = this.workers[index]!;
    await stopWorker(victim, 'SIGKILL');
    this.kills += 1;
    this.workers[index] = this.#spawn();
  }

  /** Stops every process gracefully; returns their exits. */
  stop(): Promise<Array<{ code: number | null; signal: NodeJS.Signals | null }>> {
    return Promise.all(this.workers.map((worker) => stopWorker(worker, 'SIGTERM')));
  }

  /** Kills whatever is left (test clean-up). */
  async destroy(): Promise<void> {
    await Promise.all(this.workers.filter(isAlive).map((worker) => stopWorker(worker, 'SIGKILL')));
  }

  stderr(): string {
    return this.workers.map((worker) => worker.stderr()).join('\n');
  }
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
    // runner's memory and takes the two-phase path: a kill then leaves it to recovery.
    const schedules = await addSchedules(target, options.schedules, (i) => ({
      cronExpression: '* * * * * *',
      endAt,
      ...(i % 2 === 0 ? { jitterMs: JITTER_MS } : {}),
    }));
    storage = await target.open();
    const startedAt = performance.now();

    fleet = new Fleet(options.processes, target.env);
    await fleet.ready();
    const killUntil = Math.max(performance.now() + options.killForMs, endAt.getTime() - Date.now() + performance.now());
    while (performance.now() < killUntil) {
      await sleep(randomMs(2000, 5000));
      const index = Math.floor(Math.random() * options.processes);
      await fleet.killAndRestart(index);
      if (options.awaitRestart) await fleet.workers[index]!.ready;
    }
    await fleet.ready();

    const ids = schedules.map((schedule) => schedule.id);
    await until('the ledger to settle', () => pendingWork(storage!, ids), isSettled, 90_000);
    const exits = await fleet.stop();
    expect(exits, fleet.stderr()).toEqual(exits.map(() => ({ code: 0, signal: null })));

    const audit = await auditLedger(storage, schedules);
    const { problems, ...counts } = audit;
    console.log(
      `[cron soak ${options.name}] ${JSON.stringify({
        processes: options.processes,
        schedules: options.schedules,
        kills: fleet.kills,
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
    return { audit, kills: fleet.kills };
  }

  it('postgres: 3 runners, one killed every 2–5 s for 60 s; every second of 50 schedules runs exactly once', async () => {
    const { audit, kills } = await soak({
      name: 'postgres',
      target: postgresTarget(),
      processes: 3,
      schedules: 50,
      killForMs: 60_000,
      awaitRestart: false,
    });
    expect(kills).toBeGreaterThanOrEqual(10);
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
