import { BackgroundLoop, type LoopOptions } from '@orreryjs/core';

/**
 * A cron background loop: runs its unit of work every `intervalMs`, and sooner when the
 * work knows when more is due. The work resolves with the milliseconds until its next known
 * work (0: at once, e.g. a batch was full) or null (nothing known: wait the regular interval).
 * That is how a tick lands on a schedule's next slot instead of up to a poll interval late.
 * The work's signal aborts when the loop stops.
 */
export class CronLoop extends BackgroundLoop {
  readonly #work: (signal: AbortSignal) => Promise<number | null>;

  constructor(options: LoopOptions, work: (signal: AbortSignal) => Promise<number | null>) {
    super(options);
    this.#work = work;
  }

  protected tick(signal: AbortSignal): Promise<number | null> {
    return this.#work(signal);
  }
}
