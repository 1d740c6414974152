import type { Logger } from './logger.js';

/** Settings of a {@link BackgroundLoop}. */
export interface LoopOptions {
  /** Name used in logs. */
  name: string;
  /** Pause between ticks when the last tick succeeded. */
  intervalMs: number;
  /** Cap on the back-off after failed ticks. @default 30_000 */
  maxBackoffMs?: number;
  logger: Logger;
  /** Called with each tick error after it is logged (for events); must not throw. */
  onError?: (error: unknown) => void;
}

/**
 * A loop that runs `tick` until stopped, never overlapping itself (while + await, not
 * setInterval). A failed tick is logged and followed by a capped exponential back-off; the
 * first successful tick after failures logs the recovery once.
 * `nudge()` cuts the current pause short when work arrives; `wakeIn()` (or a tick resolving
 * with a delay) shortens it to when work is known to be due, but never during a back-off.
 */
export abstract class BackgroundLoop {
  readonly #options: LoopOptions;
  readonly #abort = new AbortController();
  #done: Promise<void> | undefined;
  #failures = 0;
  #wake: (() => void) | undefined;
  #nudged = false;
  /** Earliest `performance.now()` a caller asked the next tick to start at. */
  #wakeAtMs = Number.POSITIVE_INFINITY;
  #shortenPause: (() => void) | undefined;

  constructor(options: LoopOptions) {
    this.#options = options;
  }

  /**
   * One unit of work. The signal aborts when the loop stops. It may resolve with the
   * milliseconds until its next known work, to start the next tick sooner than `intervalMs`.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: loops with nothing to tell declare Promise<void>.
  protected abstract tick(signal: AbortSignal): Promise<number | null | undefined | void>;

  /** Starts the loop; idempotent. */
  start(): void {
    this.#done ??= this.#run(this.#abort.signal);
  }

  /** Its name in logs and health reports. */
  get name(): string {
    return this.#options.name;
  }

  /** Ticks failed in a row (0 after a success): a loop backing off is late with its work. */
  get consecutiveFailures(): number {
    return this.#failures;
  }

  /** True between start() and stop(). */
  get running(): boolean {
    return this.#done !== undefined && !this.#abort.signal.aborted;
  }

  /** Stops the loop and waits for the tick in flight; idempotent. */
  async stop(): Promise<void> {
    this.#abort.abort();
    this.#wake?.();
    await this.#done;
  }

  /** Ends the current pause now, so the next tick starts at once. */
  nudge(): void {
    this.#nudged = true;
    this.#wake?.();
  }

  /** Starts the next tick within `delayMs` when that is sooner than planned; ignored while backing off. */
  wakeIn(delayMs: number): void {
    if (this.#failures > 0) return;
    this.#wakeAtMs = Math.min(this.#wakeAtMs, performance.now() + Math.max(0, delayMs));
    this.#shortenPause?.();
  }

  async #run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      this.#nudged = false;
      try {
        const nextWorkInMs = await this.tick(signal);
        // Once per outage: the failures were logged one by one, the recovery is logged once.
        if (this.#failures > 0) {
          this.#options.logger.info(
            { loop: this.#options.name, failures: this.#failures },
            'background loop recovered',
          );
        }
        this.#failures = 0;
        if (typeof nextWorkInMs === 'number') this.wakeIn(nextWorkInMs);
      } catch (error) {
        this.#failures += 1;
        this.#wakeAtMs = Number.POSITIVE_INFINITY;
        this.#options.logger.error({ err: error, loop: this.#options.name }, 'background loop tick failed');
        this.#options.onError?.(error);
      }
      if (!this.#nudged) await this.#pause(this.#nextDelayMs(), signal);
    }
  }

  #nextDelayMs(): number {
    if (this.#failures === 0) return this.#options.intervalMs;
    const backoff = this.#options.intervalMs * 2 ** Math.min(this.#failures, 10);
    return Math.min(backoff, this.#options.maxBackoffMs ?? 30_000);
  }

  #pause(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    const endsAtMs = performance.now() + ms;
    return new Promise((resolve) => {
      let cancelTimer = () => {};
      const done = () => {
        cancelTimer();
        this.#wake = undefined;
        this.#shortenPause = undefined;
        this.#wakeAtMs = Number.POSITIVE_INFINITY;
        resolve();
      };
      const schedule = () => {
        cancelTimer();
        cancelTimer = setLongTimeout(done, Math.min(endsAtMs, this.#wakeAtMs) - performance.now());
      };
      this.#wake = done;
      this.#shortenPause = schedule;
      schedule();
    });
  }
}

/** A loop whose last tick failed, as a health report names it. */
export interface FailingLoop {
  loop: string;
  /** Ticks failed in a row. */
  failures: number;
}

/** The loops among `loops` whose last tick failed: each is backing off, late with its work. */
export function failingLoops(loops: readonly BackgroundLoop[]): FailingLoop[] {
  return loops
    .filter((loop) => loop.consecutiveFailures > 0)
    .map((loop) => ({ loop: loop.name, failures: loop.consecutiveFailures }));
}

/**
 * Emits an event without letting a throwing listener break the caller: the error is logged.
 * Events only report; Orrery's control flow never depends on them.
 */
export function emitSafely<E extends string, P>(
  emitter: { emit(event: E, payload: P): boolean },
  logger: Logger,
  event: E,
  payload: P,
): void {
  try {
    emitter.emit(event, payload);
  } catch (error) {
    logger.error({ err: error, event }, 'event listener threw');
  }
}

/**
 * The longest delay `setTimeout` honours (2³¹ − 1 ms, about 24.8 days). Node runs a longer one
 * after 1 ms instead, so every wait that can be longer goes through {@link setLongTimeout}.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Calls `callback` once after `ms`, however long: delays past {@link MAX_TIMER_MS} are chained
 * timers. `Infinity` never fires; a negative or NaN delay fires at the next turn. The timers do
 * not keep the process alive longer than `setTimeout` would. Returns a function that cancels it.
 */
export function setLongTimeout(callback: () => void, ms: number): () => void {
  if (ms === Number.POSITIVE_INFINITY) return () => {};
  const endsAtMs = performance.now() + (Number.isNaN(ms) ? 0 : Math.max(0, ms));
  let timer: ReturnType<typeof setTimeout>;
  const arm = (): void => {
    const leftMs = endsAtMs - performance.now();
    timer = leftMs > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(callback, Math.max(0, leftMs));
  };
  arm();
  return () => clearTimeout(timer);
}

/** Resolves after `ms` (any length; `Infinity` only on abort), or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const cancel = setLongTimeout(finish, ms);
    function finish(): void {
      cancel();
      signal?.removeEventListener('abort', finish);
      resolve();
    }
    signal?.addEventListener('abort', finish, { once: true });
  });
}
