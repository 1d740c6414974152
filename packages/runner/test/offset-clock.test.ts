import { afterEach, describe, expect, it } from 'vitest';
import { tempSqliteStorage } from '../../../test/support/sqlite.js';
import { OffsetClock } from '../src/heartbeat.js';

/*
 * The runner's clock against a real store's clock (SQLite's is the host's): a local clock set
 * apart from it by a known amount stands for a host whose clock drifted.
 */

describe('OffsetClock', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function runnersStore() {
    const { storage, remove } = await tempSqliteStorage();
    cleanups.push(remove);
    return storage.runners;
  }

  /** A local clock that reads `behindMs` behind the host's. */
  const behind = (behindMs: number) => ({ now: () => new Date(Date.now() - behindMs) });

  it('applies an offset past the measurement’s uncertainty', async () => {
    const runners = await runnersStore();
    const clock = new OffsetClock(behind(30_000), true);
    await clock.measure(runners);
    expect(Math.abs(clock.offsetMs - 30_000)).toBeLessThanOrEqual(50);
    expect(Math.abs(clock.now().getTime() - Date.now())).toBeLessThanOrEqual(50);
  });

  it('takes an offset within the uncertainty (a millisecond, on one host) as none, every time', async () => {
    const runners = await runnersStore();
    for (const behindMs of [0, 1, -1]) {
      const clock = new OffsetClock(behind(behindMs), true);
      for (let i = 0; i < 200; i++) {
        await clock.measure(runners);
        expect(clock.offsetMs).toBe(0);
      }
    }
  });

  it('never corrects a clock it is told not to measure (a test’s clock is the authority)', async () => {
    const runners = await runnersStore();
    const clock = new OffsetClock(behind(30_000), false);
    await clock.measure(runners);
    expect(clock.offsetMs).toBe(0);
  });
});
