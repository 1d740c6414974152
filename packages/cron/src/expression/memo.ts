/**
 * The most results a parse cache keeps. A process sees as many distinct expressions as it
 * has schedules at most, and usually a few dozen; past the bound a cache starts again empty
 * (cheaper than tracking recency, and a miss only costs one parse).
 */
export const PARSE_CACHE_LIMIT = 10_000;

/**
 * A bounded memo of a pure function of a string key: the cached results of expression
 * parsing. Only results are kept, never errors: a thrown error is a fresh object each time,
 * since callers add to its message (`schedules[3]: …`).
 */
export class ParseCache<T> {
  readonly #entries = new Map<string, T>();

  /** The cached value of `key`, computing and keeping it with `compute` on a miss. */
  get(key: string, compute: () => T): T {
    let value = this.#entries.get(key);
    if (value === undefined) {
      value = compute();
      if (this.#entries.size >= PARSE_CACHE_LIMIT) this.#entries.clear();
      this.#entries.set(key, value);
    }
    return value;
  }
}
