/** The source of "now". Inject one in tests to control time; Orrery never reads time elsewhere. */
export interface Clock {
  now(): Date;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => new Date() };

/**
 * A clock that moves only when told: for tests of schedules, leases and catch-up.
 */
export class ManualClock implements Clock {
  #ms: number;

  constructor(start: Date = new Date(0)) {
    this.#ms = start.getTime();
  }

  /** The current manual time. */
  now(): Date {
    return new Date(this.#ms);
  }

  /** Moves time forward by `ms`. */
  advance(ms: number): void {
    this.#ms += ms;
  }

  /** Jumps to `date`. */
  set(date: Date): void {
    this.#ms = date.getTime();
  }
}
