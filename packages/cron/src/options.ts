import {
  type Clock,
  type CronExecutionRow,
  type CronStore,
  emitSafely,
  type Logger,
  type PipelineExecutor,
} from '@orrery/core';
import type { CronEmit, CronEvents } from './events.js';
import type { CronSettings } from './settings.js';

/** Which workflows this process can run (the runner's registry). */
export interface WorkflowCatalog {
  has(name: string): boolean;
  names(): string[];
}

/**
 * Test-only fault injection: throwing from a hook simulates a crash at that point, so the
 * error propagates out of `tick()` or `recover()` and no later step of that unit runs.
 */
export interface CronFaults {
  /** After the claim transaction committed, before any handoff. */
  afterPhase1?(rows: readonly CronExecutionRow[]): void | Promise<void>;
  /** After `executeAsync` returned, before phase 2 links the row. */
  afterHandoff?(row: CronExecutionRow, pipelineExecutionId: string): void | Promise<void>;
  /** During a recovery attempt: after the re-handoff, before the row is linked. */
  duringRecovery?(row: CronExecutionRow): void | Promise<void>;
}

/** What a {@link CronService} is built from; the runner supplies all of it. */
export interface CronServiceOptions {
  store: CronStore;
  executor: PipelineExecutor;
  clock: Clock;
  logger: Logger;
  /** Written to `claimedBy` and used as the recovery lease owner. */
  runnerId: string;
  settings: CronSettings;
  workflows: WorkflowCatalog;
  emit: CronEmit;
  faults?: CronFaults;
}

/** Sends one event through `options.emit`; a throwing listener is logged, never rethrown. */
export function emitEvent<K extends keyof CronEvents>(
  options: Pick<CronServiceOptions, 'emit' | 'logger'>,
  event: K,
  payload: CronEvents[K][0],
): void {
  const emitter = {
    emit: (name: K, args: CronEvents[K][0]) => {
      options.emit(name, ...([args] as CronEvents[K]));
      return true;
    },
  };
  emitSafely(emitter, options.logger, event, payload);
}
