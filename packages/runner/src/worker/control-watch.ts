import {
  ACTIVE_PIPELINE_STATUSES,
  BackgroundLoop,
  type ExecutionStore,
  type Logger,
  type PipelineStatus,
} from '@orreryjs/core';
import type { ActiveTasks, PipelineStopCause } from './active-tasks.js';
import type { ClaimedAhead } from './claimed-ahead.js';

/** Settings of {@link ControlWatch}. */
export interface ControlWatchOptions {
  store: ExecutionStore;
  active: ActiveTasks;
  ahead: ClaimedAhead;
  pollIntervalMs: number;
  logger: Logger;
  /** Aborts the local attempts of a pipeline and drops its tasks claimed ahead. */
  stop(pipelineExecutionId: string, cause: PipelineStopCause): void;
}

const CLAIMABLE: ReadonlySet<PipelineStatus> = new Set(ACTIVE_PIPELINE_STATUSES);

/**
 * Notices pauses and cancels that other processes made, where no wake-up tells (SQLite, or
 * Postgres with `listen: false`): every `pollIntervalMs`, while this process runs or holds
 * tasks claimed ahead, it reads the state of their pipelines and stops the local work of any
 * that is no longer claimable. With wake-ups the runner stops them on the notification instead,
 * and this loop is not started. Either way no attempt runs on past a remote pause or cancel by
 * more than one wake-up, rather than until its next lease renewal (a third of `taskLeaseMs`).
 */
export class ControlWatch extends BackgroundLoop {
  readonly #options: ControlWatchOptions;

  constructor(options: ControlWatchOptions) {
    super({ name: 'control-watch', intervalMs: options.pollIntervalMs, logger: options.logger });
    this.#options = options;
  }

  protected async tick(): Promise<void> {
    const { active, ahead, store, stop } = this.#options;
    const ids = [...new Set([...active.pipelineIds(), ...ahead.pipelineIds()])];
    // One read per pipeline with local work: at most a few dozen, and only while there is some.
    const rows = await Promise.all(ids.map((id) => store.getPipeline(id)));
    for (const [index, id] of ids.entries()) {
      // A pipeline gone (retention deleted it) is as good as cancelled.
      const status = rows[index]?.status ?? 'cancelled';
      if (!CLAIMABLE.has(status)) stop(id, status === 'paused' ? 'paused' : 'cancelled');
    }
  }
}
