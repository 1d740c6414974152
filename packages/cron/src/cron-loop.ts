import { BackgroundLoop, type LoopOptions } from '@orreryjs/core';

/**
 * A cron background loop: runs its unit of work every `intervalMs`, and sooner when the
 * work knows when more is due. The work resolves with the milliseconds until its next known
 * work (0: at once, e.g. a batch was full) or null (nothing known: wait the regular interval).
 * That is how a tick lands on a schedule's next slot instead of up to a poll interval late.
 */
export class CronLoop extends BackgroundLoop {
  readonly #work: () => Promise<number | null>;

  constructor(options: LoopOptions, work: () => Promise<number | null>) {
    super(options);
    this.#work = work;
  }

  protected tick(): Promise<number | null> {
    return this.#work();
  }
}
