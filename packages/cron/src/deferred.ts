import type { CronExecutionRow } from '@orreryjs/core';

/**
 * Claimed occurrences whose fire time (scheduled time plus jitter) has not come yet, kept in
 * memory until a tick finds them due. Phase 1 already made them durable: if this process
 * stops or dies first, they stay `claimed` and recovery hands them off once they are
 * `lostThresholdMs` past their fire time, so holding them here never risks losing one.
 */
export class DeferredHandoffs {
  #rows: CronExecutionRow[] = [];

  /** Number of occurrences waiting. */
  get size(): number {
    return this.#rows.length;
  }

  /** The earliest fire time waiting, or null. */
  earliestFireAt(): Date | null {
    return this.#rows[0]?.fireAt ?? null;
  }

  /** Adds occurrences to wait for their `fireAt`. */
  add(rows: readonly CronExecutionRow[]): void {
    if (rows.length === 0) return;
    this.#rows.push(...rows);
    this.#rows.sort((a, b) => a.fireAt.getTime() - b.fireAt.getTime());
  }

  /** Removes and returns the occurrences whose `fireAt` is at or before `now`, earliest first. */
  takeDue(now: Date): CronExecutionRow[] {
    const nowMs = now.getTime();
    let count = 0;
    while (count < this.#rows.length && this.#rows[count]!.fireAt.getTime() <= nowMs) count += 1;
    return count === 0 ? [] : this.#rows.splice(0, count);
  }

  /** Forgets every waiting occurrence (at stop: recovery owns them from then on). */
  clear(): number {
    const count = this.#rows.length;
    this.#rows = [];
    return count;
  }
}
