import { hostname } from 'node:os';
import { BackgroundLoop, type Clock, type Logger, type RunnerStore } from '@orreryjs/core';

/** How often a runner refreshes its row in `runners` and re-measures its clock offset. */
export const HEARTBEAT_INTERVAL_MS = 10_000;

/**
 * The runner's clock: the configured clock plus the measured offset from the database's
 * clock, so that due times and leases agree across hosts whose clocks drift apart.
 */
export class OffsetClock implements Clock {
  readonly #base: Clock;
  readonly #measures: boolean;
  #offsetMs = 0;

  /**
   * @param measures Measure the offset at all: only for the system clock. An injected clock
   * (a test's ManualClock) is the authority on time and is never corrected.
   */
  constructor(base: Clock, measures: boolean) {
    this.#base = base;
    this.#measures = measures;
  }

  /** The last measured offset: database time minus local time, in ms. */
  get offsetMs(): number {
    return this.#offsetMs;
  }

  now(): Date {
    const local = this.#base.now();
    return this.#offsetMs === 0 ? local : new Date(local.getTime() + this.#offsetMs);
  }

  /**
   * Measures the offset from the database's clock, assuming the reply was made halfway through
   * the round trip. An offset within the measurement's own uncertainty (half the round trip,
   * plus the millisecond each reading is truncated to) is taken as none: two processes on one
   * host would otherwise each measure 0 or 1 ms at random, and a runner whose clock reads 1 ms
   * behind a writer's would wait a timer's millisecond before claiming each task it is woken for.
   */
  async measure(runners: RunnerStore): Promise<void> {
    if (!this.#measures) return;
    const sentMs = this.#base.now().getTime();
    const databaseMs = (await runners.databaseNow()).getTime();
    const receivedMs = this.#base.now().getTime();
    const offsetMs = databaseMs - (sentMs + receivedMs) / 2;
    const uncertaintyMs = (receivedMs - sentMs) / 2 + 1;
    this.#offsetMs = Math.abs(offsetMs) <= uncertaintyMs ? 0 : Math.round(offsetMs);
  }
}

/** Settings of {@link HeartbeatLoop}. */
export interface HeartbeatOptions {
  runners: RunnerStore;
  runnerId: string;
  clock: OffsetClock;
  /** Names of the registered workflows, read at each beat. */
  workflows(): string[];
  logger: Logger;
}

/** Refreshes this runner's row in `runners` and re-measures the clock offset, every {@link HEARTBEAT_INTERVAL_MS}. */
export class HeartbeatLoop extends BackgroundLoop {
  readonly #options: HeartbeatOptions;
  readonly #startedAt: Date;
  #beaten = false;
  /** Monotonic time of the last beat: the loop's first tick skips a beat that start() just wrote. */
  #lastBeatMs = Number.NEGATIVE_INFINITY;

  constructor(options: HeartbeatOptions) {
    super({ name: 'heartbeat', intervalMs: HEARTBEAT_INTERVAL_MS, logger: options.logger });
    this.#options = options;
    this.#startedAt = options.clock.now();
  }

  /** True once a heartbeat was written: there is a row to mark stopped. */
  get beaten(): boolean {
    return this.#beaten;
  }

  /** Writes one heartbeat now (also the loop's tick). */
  async beat(): Promise<void> {
    const { runners, runnerId, clock } = this.#options;
    await clock.measure(runners);
    await runners.heartbeat({
      id: runnerId,
      hostname: hostname(),
      pid: process.pid,
      workflows: this.#options.workflows(),
      startedAt: this.#startedAt,
      heartbeatAt: clock.now(),
    });
    this.#beaten = true;
    this.#lastBeatMs = performance.now();
  }

  protected async tick(): Promise<void> {
    if (performance.now() - this.#lastBeatMs < HEARTBEAT_INTERVAL_MS / 2) return;
    await this.beat();
  }
}
