import {
  type Clock,
  type CronExecutionRow,
  type CronStore,
  emitSafely,
  type Logger,
  type NewPipeline,
  type PipelineExecutor,
} from '@orreryjs/core';
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
  /**
   * After a claim that replaced pipelines under `cancel_other` committed, before the scheduler
   * tells the executor about the cancels (with the replaced pipelines' ids).
   */
  afterReplacedCommit?(pipelineExecutionIds: readonly string[]): void | Promise<void>;
  /** After `executeAsync` returned, before phase 2 links the row. */
  afterHandoff?(row: CronExecutionRow, pipelineExecutionId: string): void | Promise<void>;
  /** During a recovery attempt: after the re-handoff, before the row is linked. */
  duringRecovery?(row: CronExecutionRow): void | Promise<void>;
}

/**
 * Offered by an executor that shares the scheduler's database (the DefaultRunner): the tick
 * creates each due occurrence's pipeline inside its claim transaction, so phase 1, the
 * pipeline rows and the link commit together — one transaction per tick batch instead of
 * three per occurrence. Without it, the two-phase path (handoff, then link) runs.
 */
export interface InTransactionHandoff {
  /**
   * Builds the pipeline of a due occurrence, synchronously, inside the claim transaction.
   * Returns null when it cannot (the two-phase path then runs and reports why); never throws.
   */
  preparePipeline(occurrence: CronExecutionRow, now: Date): NewPipeline | null;
  /** Called after the commit with the occurrences handed off in it, e.g. to wake a task loop. */
  handedOff(occurrences: readonly CronExecutionRow[]): void;
  /**
   * Called after a commit that cancelled these pipelines (`cancel_other` replaced them in the
   * claim transaction), e.g. to abort their tasks running in this process and wake their waiters.
   */
  cancelled(pipelineExecutionIds: readonly string[]): Promise<void>;
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
  /** Set by an executor on the scheduler's own database; see {@link InTransactionHandoff}. */
  inTransactionHandoff?: InTransactionHandoff;
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
