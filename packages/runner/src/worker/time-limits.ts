import { MAX_TIMER_MS } from '@orreryjs/core';

/**
 * The time limits of the attempts running in this process, on one timer armed at the earliest
 * of them. Why not a timer per attempt: Node keeps one timer list per distinct delay and makes
 * it anew once the last timer of that delay is gone, so with one attempt at a time every
 * attempt paid for a new list and a native call to schedule it, a step of every start. Here an
 * attempt that ends leaves the timer as it is; when the timer fires for attempts that already
 * ended, it is armed again for the earliest limit still running, if any.
 *
 * A limit may be of any length (chained past setTimeout's 2³¹ ms); `Infinity` is none. The timer
 * keeps the process alive only while a limit is running, as a timer per attempt did.
 */
export class TimeLimits {
  /** When each running limit expires, in `performance.now()` ms, and what to call then. */
  readonly #limits = new Map<object, { endsAtMs: number; expire: () => void }>();
  #timer: ReturnType<typeof setTimeout> | null = null;
  /** When the armed timer fires (`performance.now()` ms); Infinity when none is armed. */
  #firesAtMs = Number.POSITIVE_INFINITY;

  /** Limits running now: started, neither cleared nor expired. */
  get size(): number {
    return this.#limits.size;
  }

  /** Calls `expire` once after `ms` unless {@link clear} is called for `key` first. */
  start(key: object, ms: number, expire: () => void): void {
    if (ms === Number.POSITIVE_INFINITY) return;
    const endsAtMs = performance.now() + (Number.isNaN(ms) ? 0 : Math.max(0, ms));
    this.#limits.set(key, { endsAtMs, expire });
    if (endsAtMs < this.#firesAtMs) this.#arm(endsAtMs);
    else if (this.#limits.size === 1) this.#timer?.ref();
  }

  /** The limit of `key` no longer applies (its attempt's code is over). */
  clear(key: object): void {
    if (this.#limits.delete(key) && this.#limits.size === 0) this.#timer?.unref();
  }

  // Not setLongTimeout: its timer cannot be left armed and unref'd, and clearing it whenever no limit runs is the cost avoided here.
  #arm(atMs: number): void {
    this.#disarm();
    this.#firesAtMs = atMs;
    // A timer's delay is whole ms, and it may fire a fraction early by performance.now(): #fire arms again for the rest.
    this.#timer = setTimeout(
      () => this.#fire(),
      Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(atMs - performance.now()))),
    );
  }

  #disarm(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#firesAtMs = Number.POSITIVE_INFINITY;
  }

  #fire(): void {
    this.#timer = null;
    this.#firesAtMs = Number.POSITIVE_INFINITY;
    const nowMs = performance.now();
    let nextMs = Number.POSITIVE_INFINITY;
    const expired: Array<() => void> = [];
    for (const [key, limit] of this.#limits) {
      if (limit.endsAtMs <= nowMs) {
        this.#limits.delete(key);
        expired.push(limit.expire);
      } else nextMs = Math.min(nextMs, limit.endsAtMs);
    }
    if (nextMs !== Number.POSITIVE_INFINITY) this.#arm(nextMs);
    for (const expire of expired) expire();
  }
}
