import {
  ExecutionNotFoundError,
  isTerminalPipelineStatus,
  type Logger,
  type PipelineRow,
  PipelineTimeoutError,
  RETRYABLE_PIPELINE_STATUSES,
  setLongTimeout,
  type TaskRow,
} from '@orreryjs/core';

/** A terminal pipeline, with its task rows when the process that finished it knew them all. */
export interface FinishedPipeline {
  row: PipelineRow;
  tasks: readonly TaskRow[] | null;
}

/** Ends another process can undo (core's retryable ones: `retryExecution` sets them running again). */
const UNDOABLE: ReadonlySet<string> = new Set(RETRYABLE_PIPELINE_STATUSES);

/**
 * First pause before reading a pipeline that some other runner may finish; doubles up to
 * `pollIntervalMs`. The runner passes `pollIntervalMs` instead when it runs the workflow
 * itself, since it will then most likely be notified first.
 */
export const FIRST_POLL_DELAY_MS = 10;
/** Reads per sweep, and the least time between sweeps: thousands of waiters must not flood the database. */
const MAX_POLLS_PER_SWEEP = 16;
const MIN_SWEEP_GAP_MS = 50;
/**
 * Pipelines this process finished most recently, kept so that a wait() that starts after the
 * end (executeAsync now, wait later) resolves without a read. Only `completed` ends are kept: a
 * failed or cancelled pipeline may be retried by another process, and a memory of its end
 * would then answer every later wait with a stale status.
 */
const RECENTLY_FINISHED_LIMIT = 10_000;
/** Task rows are remembered only for pipelines this small; larger ones are read again (one read among many tasks). */
const REMEMBERED_TASKS_LIMIT = 16;

/**
 * Poll pacing runs on the monotonic timer clock, not the injected Clock: it decides when to
 * look again, never what a row means, and must keep working when tests freeze a ManualClock.
 */
function monotonicMs(): number {
  return performance.now();
}

interface Waiter {
  resolve(finished: FinishedPipeline): void;
  reject(error: unknown): void;
}

interface Entry {
  waiters: Set<Waiter>;
  delayMs: number;
  dueAtMs: number;
  /** A read is in flight; a wake-up meanwhile sets `woken`, so that its news is not lost to the back-off. */
  polling: boolean;
  woken: boolean;
}

/** What {@link CompletionWaiters} needs: a way to read a pipeline, and how often at most. */
export interface CompletionOptions {
  getPipeline(id: string): Promise<PipelineRow | null>;
  pollIntervalMs: number;
  logger: Logger;
}

/**
 * Waits for pipelines to become terminal. A pipeline this process finishes wakes its waiters
 * at once ({@link notify}); one finished elsewhere (or before the wait began) is noticed by
 * polling, first after 10 ms, then with a back-off up to `pollIntervalMs`, with a cap on
 * reads per sweep.
 */
export class CompletionWaiters {
  readonly #options: CompletionOptions;
  readonly #entries = new Map<string, Entry>();
  readonly #recentlyFinished = new Map<string, FinishedPipeline>();
  /** Cancels the pending sweep, when one is planned. */
  #timer: (() => void) | undefined;
  #timerAtMs = 0;
  #sweeping = false;
  #closedWith: unknown;

  constructor(options: CompletionOptions) {
    this.#options = options;
  }

  /**
   * Resolves with the pipeline row once it is terminal; the first read happens after
   * `firstPollDelayMs` (capped at `pollIntervalMs`), the next ones with a doubling back-off.
   * A `firstPollDelayMs` of 0 (wake-ups from other processes are live) reads at once, for a
   * pipeline that finished before the wait began, then only every `pollIntervalMs`.
   * @throws ExecutionNotFoundError for an unknown id.
   * @throws PipelineTimeoutError after `timeoutMs`.
   */
  wait(id: string, timeoutMs: number, firstPollDelayMs = FIRST_POLL_DELAY_MS): Promise<FinishedPipeline> {
    if (this.#closedWith !== undefined) return Promise.reject(this.#closedWith);
    const finished = this.#recentlyFinished.get(id);
    if (finished !== undefined) return Promise.resolve(finished);
    return new Promise<FinishedPipeline>((resolve, reject) => {
      // Any length: a wait of 2³¹ ms or more must not end after 1 ms, as setTimeout's would.
      const cancelTimer = setLongTimeout(() => {
        this.#remove(id, waiter);
        reject(
          new PipelineTimeoutError(
            `Execution ${id} did not finish within ${timeoutMs} ms; it keeps running. Wait again, raise timeoutMs (or pipelineTimeoutMs), or check that a runner with its workflow is started.`,
          ),
        );
      }, timeoutMs);
      const waiter: Waiter = {
        resolve: (finished) => {
          cancelTimer();
          resolve(finished);
        },
        reject: (error) => {
          cancelTimer();
          reject(error);
        },
      };
      // The first read waits a moment: a pipeline this process runs usually finishes (and notifies) before it.
      let entry = this.#entries.get(id);
      if (entry === undefined) {
        const delayMs = Math.min(firstPollDelayMs, this.#options.pollIntervalMs);
        const nextDelayMs = delayMs === 0 ? this.#options.pollIntervalMs : delayMs * 2;
        entry = {
          waiters: new Set(),
          delayMs: nextDelayMs,
          dueAtMs: monotonicMs() + delayMs,
          polling: false,
          woken: false,
        };
        this.#entries.set(id, entry);
        this.#schedule(entry.dueAtMs);
      }
      entry.waiters.add(waiter);
    });
  }

  /** A pipeline this process made terminal (with all its task rows, if known): wake its waiters now. */
  notify(row: PipelineRow, tasks: readonly TaskRow[] | null = null): void {
    const finished = { row, tasks };
    if (!UNDOABLE.has(row.status)) this.#remember(row, tasks);
    const entry = this.#entries.get(row.id);
    if (entry === undefined) return;
    this.#entries.delete(row.id);
    for (const waiter of entry.waiters) waiter.resolve(finished);
  }

  /**
   * Work may have finished elsewhere (another process said so, e.g. by a notification): read
   * the waited pipeline `id`, or every waited pipeline, now rather than at its next poll.
   */
  wake(id?: string): void {
    const nowMs = monotonicMs();
    const entry = id === undefined ? undefined : this.#entries.get(id);
    if (id !== undefined && entry === undefined) return;
    for (const each of entry === undefined ? this.#entries.values() : [entry]) {
      each.dueAtMs = nowMs;
      if (each.polling) each.woken = true;
    }
    if (this.#entries.size > 0) this.#schedule(nowMs);
  }

  /** Rejects every waiter (the runner is shutting down) and refuses new ones. */
  close(error: unknown): void {
    this.#closedWith = error;
    this.#recentlyFinished.clear();
    this.#timer?.();
    this.#timer = undefined;
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    for (const entry of entries) for (const waiter of entry.waiters) waiter.reject(error);
  }

  #remember(row: PipelineRow, tasks: readonly TaskRow[] | null): void {
    this.#recentlyFinished.set(row.id, {
      row,
      tasks: tasks !== null && tasks.length <= REMEMBERED_TASKS_LIMIT ? tasks : null,
    });
    if (this.#recentlyFinished.size > RECENTLY_FINISHED_LIMIT) {
      this.#recentlyFinished.delete(this.#recentlyFinished.keys().next().value as string);
    }
  }

  #remove(id: string, waiter: Waiter): void {
    const entry = this.#entries.get(id);
    if (entry === undefined) return;
    entry.waiters.delete(waiter);
    if (entry.waiters.size === 0) this.#entries.delete(id);
  }

  async #poll(id: string, entry: Entry): Promise<void> {
    let row: PipelineRow | null | undefined;
    entry.polling = true;
    entry.woken = false;
    try {
      row = await this.#options.getPipeline(id);
    } catch (error) {
      this.#options.logger.warn({ err: error, executionId: id }, 'could not read pipeline while waiting; will retry');
    } finally {
      entry.polling = false;
    }
    if (this.#entries.get(id) !== entry) return;
    if (row === null) {
      this.#entries.delete(id);
      const error = new ExecutionNotFoundError(`No pipeline execution has id "${id}"; list executions to find it.`);
      for (const waiter of entry.waiters) waiter.reject(error);
      return;
    }
    if (row !== undefined && isTerminalPipelineStatus(row.status)) {
      this.notify(row);
      return;
    }
    if (entry.woken) {
      // Woken while the read was in flight: the read may predate the news, so read again.
      entry.woken = false;
      entry.dueAtMs = monotonicMs();
    } else {
      entry.dueAtMs = monotonicMs() + entry.delayMs;
      entry.delayMs = Math.min(entry.delayMs * 2, this.#options.pollIntervalMs);
    }
    this.#schedule(entry.dueAtMs);
  }

  #schedule(atMs: number): void {
    if (this.#sweeping || this.#closedWith !== undefined) return;
    if (this.#timer !== undefined) {
      if (this.#timerAtMs <= atMs) return;
      this.#timer();
    }
    this.#timerAtMs = atMs;
    // pollIntervalMs may be 2³¹ ms or more: a plain setTimeout would fire after 1 ms and spin.
    this.#timer = setLongTimeout(() => void this.#sweep(), atMs - monotonicMs());
  }

  /** Re-reads the waiters that are due, at most {@link MAX_POLLS_PER_SWEEP} at a time. */
  async #sweep(): Promise<void> {
    this.#timer = undefined;
    this.#sweeping = true;
    const nowMs = monotonicMs();
    const due: Array<[string, Entry]> = [];
    let nextDueMs = Number.POSITIVE_INFINITY;
    for (const [id, entry] of this.#entries) {
      if (entry.dueAtMs <= nowMs && due.length < MAX_POLLS_PER_SWEEP) due.push([id, entry]);
      else nextDueMs = Math.min(nextDueMs, entry.dueAtMs);
    }
    // Polled entries move to the back, so that a crowd of waiters is read round-robin.
    for (const [id, entry] of due) {
      this.#entries.delete(id);
      this.#entries.set(id, entry);
    }
    try {
      await Promise.all(due.map(([id, entry]) => this.#poll(id, entry)));
    } finally {
      this.#sweeping = false;
    }
    for (const entry of this.#entries.values()) nextDueMs = Math.min(nextDueMs, entry.dueAtMs);
    if (Number.isFinite(nextDueMs)) this.#schedule(Math.max(nextDueMs, monotonicMs() + MIN_SWEEP_GAP_MS));
  }
}
