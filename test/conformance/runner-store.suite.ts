import type { RunnerRow } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { at, type OpenStorage, useStorage } from './fixtures.js';

/** Up to how far the database clock may be from this host's (they share a host in tests). */
const CLOCK_TOLERANCE_MS = 5000;

function runner(id: string, overrides: Partial<Omit<RunnerRow, 'stoppedAt'>> = {}): Omit<RunnerRow, 'stoppedAt'> {
  return {
    id,
    hostname: 'host-1',
    pid: 4242,
    workflows: ['etl', 'report'],
    startedAt: at(0),
    heartbeatAt: at(0),
    ...overrides,
  };
}

/** RunnerStore behaviour, on a fresh database per test (listRunners reads the whole table). */
export function describeRunnerStore(open: OpenStorage): void {
  describe('RunnerStore', () => {
    const storage = useStorage(open, 'each');
    const store = () => storage().runners;
    const listById = async () => (await store().listRunners()).sort((a, b) => (a.id < b.id ? -1 : 1));

    it('inserts a runner on its first heartbeat and refreshes the same row on the next', async () => {
      await store().heartbeat(runner('r1'));
      expect(await store().listRunners()).toEqual([{ ...runner('r1'), stoppedAt: null }]);
      const refreshed = runner('r1', { hostname: 'host-2', pid: 7, workflows: ['etl'], heartbeatAt: at(5000) });
      await store().heartbeat(refreshed);
      expect(await store().listRunners()).toEqual([{ ...refreshed, stoppedAt: null }]);
    });

    it('lists every runner', async () => {
      await store().heartbeat(runner('r2', { startedAt: at(1), workflows: [] }));
      await store().heartbeat(runner('r1', { startedAt: at(2) }));
      expect(await listById()).toEqual([
        { ...runner('r1', { startedAt: at(2) }), stoppedAt: null },
        { ...runner('r2', { startedAt: at(1), workflows: [] }), stoppedAt: null },
      ]);
    });

    it('records a graceful stop of one runner, and a later heartbeat marks it alive again', async () => {
      await store().heartbeat(runner('r1'));
      await store().heartbeat(runner('r2'));
      await store().markStopped('r1', at(10));
      await store().markStopped('unknown', at(10));
      expect(await listById()).toEqual([
        { ...runner('r1'), stoppedAt: at(10) },
        { ...runner('r2'), stoppedAt: null },
      ]);
      await store().heartbeat(runner('r1', { startedAt: at(20), heartbeatAt: at(20) }));
      expect((await listById())[0]).toEqual({
        ...runner('r1', { startedAt: at(20), heartbeatAt: at(20) }),
        stoppedAt: null,
      });
    });

    it('deletes the rows of runners silent since before the cutoff, a batch at a time', async () => {
      await store().heartbeat(runner('stopped', { heartbeatAt: at(10) }));
      await store().markStopped('stopped', at(20));
      await store().heartbeat(runner('dead-1', { heartbeatAt: at(30) }));
      await store().heartbeat(runner('dead-2', { heartbeatAt: at(40) }));
      await store().heartbeat(runner('live', { heartbeatAt: at(100) }));
      expect(await store().deleteSilentRunners(at(100), 2)).toBe(2);
      expect(await store().deleteSilentRunners(at(100), 2)).toBe(1);
      expect(await store().deleteSilentRunners(at(100), 2)).toBe(0);
      expect((await listById()).map((row) => row.id)).toEqual(['live']);
    });

    it("reads the database clock, within a few seconds of this host's", async () => {
      const before = Date.now();
      const databaseNow = await store().databaseNow();
      const after = Date.now();
      expect(databaseNow).toBeInstanceOf(Date);
      expect(databaseNow.getTime()).toBeGreaterThanOrEqual(before - CLOCK_TOLERANCE_MS);
      expect(databaseNow.getTime()).toBeLessThanOrEqual(after + CLOCK_TOLERANCE_MS);
    });
  });
}
