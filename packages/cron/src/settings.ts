import { DEFAULT_MAX_CONTEXT_BYTES } from '@orreryjs/core';

/**
 * Tuning of a {@link CronService}: the runner's `cron…` config fields without the prefix
 * (`cronPollIntervalMs` → `pollIntervalMs`), already validated by the runner.
 */
export interface CronSettings {
  /**
   * Pause between scheduler ticks.
   * @default 1_000
   */
  pollIntervalMs: number;
  /**
   * Lost occurrences one recovery pass takes, and buffered occurrences one tick releases. (A
   * tick's claim takes every due schedule up to `maxOccurrencesPerTick`.)
   * @default 100
   */
  batchSize: number;
  /**
   * Catch-up occurrences a `run_all` schedule runs per tick; a larger backlog drains over ticks.
   * @default 100
   */
  maxCatchupExecutions: number;
  /**
   * Ledger rows written in one claim transaction, all schedules together.
   * @default 500
   */
  maxOccurrencesPerTick: number;
  /**
   * An occurrence claimed this long after its time or less is on time and always runs.
   * @default 60_000
   */
  misfireThresholdMs: number;
  /**
   * `run_all` drops missed occurrences older than this.
   * @default 86_400_000
   */
  maxCatchupAgeMs: number;
  /**
   * Run the tick loop on `start()`. Schedule management works either way.
   * @default true
   */
  enableScheduling: boolean;
  /**
   * Run the recovery loop on `start()`.
   * @default true
   */
  enableRecovery: boolean;
  /**
   * Pause between recovery passes.
   * @default 30_000
   */
  recoveryIntervalMs: number;
  /**
   * An occurrence still `claimed` this long after its fire time and its claim is lost and recovered.
   * @default 60_000
   */
  lostThresholdMs: number;
  /**
   * Recovery abandons an occurrence whose handoff was due longer ago than this: measured from
   * the later of its claim and its fire time (jitter included), unless its pipeline exists.
   * @default 86_400_000
   */
  maxRecoveryAgeMs: number;
  /**
   * Recovery abandons an occurrence after this many attempts (database errors do not count).
   * @default 3
   */
  maxRecoveryAttempts: number;
  /**
   * Largest serialised schedule context, in bytes.
   * @default 1_048_576
   */
  maxContextBytes: number;
}

/**
 * The defaults of every {@link CronSettings} field, stated once: the runner's `cron…` config
 * defaults (and its `maxContextBytes`) are read from here. Each value keeps its literal type,
 * so the runner's `RUNNER_DEFAULTS` still declares them as literals.
 */
export const CRON_DEFAULTS = Object.freeze({
  pollIntervalMs: 1_000,
  batchSize: 100,
  maxCatchupExecutions: 100,
  maxOccurrencesPerTick: 500,
  misfireThresholdMs: 60_000,
  maxCatchupAgeMs: 86_400_000,
  enableScheduling: true,
  enableRecovery: true,
  recoveryIntervalMs: 30_000,
  lostThresholdMs: 60_000,
  maxRecoveryAgeMs: 86_400_000,
  maxRecoveryAttempts: 3,
  maxContextBytes: DEFAULT_MAX_CONTEXT_BYTES,
}) satisfies Readonly<CronSettings>;
