import { isInstanceOf, type LeaseRef } from '@orreryjs/core';
import { TimeLimits } from './time-limits.js';

/** Why a running attempt's signal was aborted. Only a timeout counts as a failed attempt. */
export type AbortCause = 'timeout' | 'cancelled' | 'paused' | 'shutdown' | 'lease_lost';

/** Why a pipeline's local work stops: a call, here or in another process, cancelled or paused it. */
export type PipelineStopCause = Extract<AbortCause, 'cancelled' | 'paused'>;

const ABORT_MESSAGES: Record<AbortCause, string> = {
  timeout: 'the task timed out',
  cancelled: 'the pipeline was cancelled',
  paused: 'the pipeline was paused',
  shutdown: 'the runner is shutting down',
  lease_lost: "the runner lost the task's lease (another runner may take it over)",
};

/** One attempt this process is running: its lease, its abort switch and when it settles. */
export interface ActiveTask extends LeaseRef {
  /** `performance.now()` when the attempt started. */
  readonly startedAtMs: number;
  /** Epoch ms (runner clock) when the lease runs out unless renewed. */
  leaseExpiresAtMs: number;
  readonly controller: AbortController;
  /**
   * Ends the race of the attempt's code with the abort's reason (see the worker's
   * `runWithSignal`), set while that code runs. Called directly rather than as a listener of
   * the signal, which is created only if the task's code reads it.
   */
  interrupt: ((reason: DOMException) => void) | null;
  /** Set by the first abort: later aborts do not change what happened. */
  abortCause: AbortCause | null;
  /** Settles when the attempt is over (committed, released or abandoned). */
  done: Promise<void>;
}

/** The lease an attempt holds, without the attempt's own state. */
export function leaseOf({ taskExecutionId, pipelineExecutionId, taskId, attempt }: LeaseRef): LeaseRef {
  return { taskExecutionId, pipelineExecutionId, taskId, attempt };
}

/**
 * The attempts running in this process: what the lease loop renews, what cancel, pause and
 * shutdown abort, and what counts against `maxConcurrentTasks`.
 *
 * One attempt per task at a time: claiming a task this process still runs means the database
 * took the lease away (a pause and resume, a cancel and retry, an expiry), so the older attempt
 * is aborted and stays tracked, still counted and awaited, until it has settled; the caller
 * starts the new one only then ({@link add}).
 */
export class ActiveTasks {
  /** The latest attempt of each task, by task execution id. */
  readonly #byId = new Map<string, ActiveTask>();
  /** Older attempts of tasks claimed again, aborted and not yet settled. */
  readonly #superseded = new Set<ActiveTask>();
  readonly #idleWaiters = new Set<() => void>();
  readonly #timeLimits = new TimeLimits();

  /** Attempts running now, superseded ones that have not settled included. */
  get size(): number {
    return this.#byId.size + this.#superseded.size;
  }

  /**
   * Tracks an attempt until {@link remove}. When this process still runs an older attempt of
   * the same task, that one is aborted (its lease is gone) and returned: start the new
   * attempt's code only once its `done` has settled.
   */
  add(task: ActiveTask): ActiveTask | undefined {
    const older = this.#byId.get(task.taskExecutionId);
    this.#byId.set(task.taskExecutionId, task);
    if (older === undefined) return undefined;
    this.#superseded.add(older);
    this.abort(older, 'lease_lost');
    return older;
  }

  /** Stops tracking an attempt; wakes {@link whenIdle} waiters when none is left. */
  remove(task: ActiveTask): void {
    if (this.#byId.get(task.taskExecutionId) === task) this.#byId.delete(task.taskExecutionId);
    else this.#superseded.delete(task);
    if (this.size === 0) {
      for (const wake of this.#idleWaiters) wake();
      this.#idleWaiters.clear();
    }
  }

  /** True while `task` is tracked. */
  has(task: ActiveTask): boolean {
    return this.#byId.get(task.taskExecutionId) === task || this.#superseded.has(task);
  }

  /** Every attempt running now. */
  list(): ActiveTask[] {
    return [...this.#byId.values(), ...this.#superseded];
  }

  /** The pipelines this process runs attempts of. */
  pipelineIds(): Set<string> {
    return new Set(this.list().map((task) => task.pipelineExecutionId));
  }

  /** Leases of every attempt running now (fenced by attempt). */
  leases(): LeaseRef[] {
    return this.list().map(leaseOf);
  }

  /** Aborts one attempt's signal; the first cause wins. */
  abort(task: ActiveTask, cause: AbortCause): void {
    if (task.abortCause !== null) return;
    task.abortCause = cause;
    const name = cause === 'timeout' ? 'TimeoutError' : 'AbortError';
    const reason = new DOMException(`Task attempt aborted: ${ABORT_MESSAGES[cause]}.`, name);
    task.controller.abort(reason);
    task.interrupt?.(reason);
  }

  /** Aborts `task` as timed out after `ms` (any length; `Infinity` is none) unless {@link endTimeLimit} comes first. */
  startTimeLimit(task: ActiveTask, ms: number): void {
    this.#timeLimits.start(task, ms, () => this.abort(task, 'timeout'));
  }

  /** Attempts whose time limit runs: their code has started and not ended. */
  get timeLimitsRunning(): number {
    return this.#timeLimits.size;
  }

  /** The attempt's code is over: its time limit no longer applies. */
  endTimeLimit(task: ActiveTask): void {
    this.#timeLimits.clear(task);
  }

  /** Aborts the running attempts of one pipeline (cancel, pause); returns how many were not aborted yet. */
  abortPipeline(pipelineExecutionId: string, cause: AbortCause): number {
    const matching = this.list().filter((t) => t.pipelineExecutionId === pipelineExecutionId && t.abortCause === null);
    for (const task of matching) this.abort(task, cause);
    return matching.length;
  }

  /** Aborts this process's running instances of a map task (another instance failed it, cancelling them). */
  abortMapInstances(pipelineExecutionId: string, mapTaskId: string): void {
    for (const task of this.list()) {
      if (task.pipelineExecutionId === pipelineExecutionId && isInstanceOf(task.taskId, mapTaskId)) {
        this.abort(task, 'cancelled');
      }
    }
  }

  /** Aborts every running attempt. */
  abortAll(cause: AbortCause): void {
    for (const task of this.list()) this.abort(task, cause);
  }

  /** Resolves when no attempt is running, or after `timeoutMs`; true when idle. */
  whenIdle(timeoutMs: number): Promise<boolean> {
    if (this.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.#idleWaiters.delete(wake);
        resolve(false);
      }, timeoutMs);
      this.#idleWaiters.add(wake);
    });
  }

  /** Resolves when every attempt tracked now has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled(this.list().map((t) => t.done));
  }
}
