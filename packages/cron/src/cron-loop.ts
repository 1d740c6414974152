import { BackgroundLoop, type LoopOptions } from '@orrery/core';

/**
 * A cron background loop: runs its unit of work every `intervalMs`, and sooner when the
 * work knows when more is due. The work resolves with the milliseconds until its next known
 * work (0: at once, e.g. a batch was full) or null (nothing known: wait the regular interval).
 * That is how a tick lands on a schedule's next slot instead of up to a poll interval late.
 */
export class CronLoop extends BackgroundLoop {
  readonly #work: () => Promise<number | null>;
  readonly #intervalMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAtMs = Number.POSITIVE_INFINITY;

  constructor(options: LoopOptions, work: () => Promise<number | null>) {
    super(options);
    this.#work = work;
    this.#intervalMs = options.intervalMs;
  }

  /** Runs the next unit of work in `delayMs` when that is sooner than the regular pause. */
  wakeIn(delayMs: number): void {
    if (!this.running || delayMs >= this.#intervalMs) return;
    if (delayMs <= 0) {
      this.nudge();
      return;
    }
    const atMs = performance.now() + delayMs;
    if (this.#timer !== undefined && this.#timerAtMs <= atMs) return;
    clearTimeout(this.#timer);
    this.#timerAtMs = atMs;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerAtMs = Number.POSITIVE_INFINITY;
      this.nudge();
    }, delayMs);
    this.#timer.unref();
  }

  override async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await super.stop();
  }

  protected async tick(): Promise<void> {
    const delayMs = await this.#work();
    if (delayMs !== null) this.wakeIn(delayMs);
  }
}
