import { type RunnerRow, ValidationError } from '@orreryjs/core';
import { HEARTBEAT_INTERVAL_MS } from './heartbeat.js';

/**
 * A runner whose last heartbeat is older than this is not alive (it crashed or hangs): three
 * missed heartbeats, so that one slow beat never makes a live runner look dead.
 */
export const RUNNER_ALIVE_WINDOW_MS = 3 * HEARTBEAT_INTERVAL_MS;

/**
 * A runner silent for longer than this (it crashed a day ago and never came back) drops out of
 * `listRunners()` unless `includeStopped` asks for it: a fleet that restarts by `kill -9` would
 * otherwise list every dead process until retention deletes its row (`retention.executionsMs`).
 */
export const RUNNER_FORGOTTEN_AFTER_MS = 86_400_000;

/** A runner process as recorded in the `runners` table. */
export interface RunnerInfo {
  id: string;
  hostname: string;
  pid: number;
  /** Names of the workflows it registered at its last heartbeat. */
  workflows: string[];
  startedAt: Date;
  heartbeatAt: Date;
  /** When it shut down gracefully, or null. */
  stoppedAt: Date | null;
  /** Not stopped, and heartbeated within the last {@link RUNNER_ALIVE_WINDOW_MS} (30 s). */
  alive: boolean;
}

/** Options of `listRunners`. */
export interface ListRunnersOptions {
  /**
   * Include runners that shut down gracefully, and those silent for longer than
   * {@link RUNNER_FORGOTTEN_AFTER_MS} (a day).
   * @default false
   */
  includeStopped?: boolean;
}

/**
 * The runners to report at `now`, oldest start first.
 * @throws ValidationError when `includeStopped` is not a boolean.
 */
export function toRunnerInfos(rows: readonly RunnerRow[], options: ListRunnersOptions, now: Date): RunnerInfo[] {
  if (typeof options !== 'object' || options === null) {
    throw new ValidationError('listRunners() takes an options object like { includeStopped: true }, or nothing.');
  }
  const { includeStopped = false } = options;
  if (typeof includeStopped !== 'boolean') {
    throw new ValidationError(`includeStopped must be true or false, got ${JSON.stringify(includeStopped)}.`);
  }
  const forgottenBeforeMs = now.getTime() - RUNNER_FORGOTTEN_AFTER_MS;
  return rows
    .filter((row) => includeStopped || (row.stoppedAt === null && row.heartbeatAt.getTime() >= forgottenBeforeMs))
    .map((row) => ({
      ...row,
      workflows: [...row.workflows],
      alive: row.stoppedAt === null && now.getTime() - row.heartbeatAt.getTime() <= RUNNER_ALIVE_WINDOW_MS,
    }));
}
