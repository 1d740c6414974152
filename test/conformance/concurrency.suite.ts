import type { ScheduleRow, Storage } from '@orreryjs/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  at,
  DIAMOND,
  LEASE_MS,
  newPipeline,
  type OpenStorage,
  occurrence,
  SINGLE,
  scheduleRow,
  uniqueName,
  useStorage,
} from './fixtures.js';

const MINUTE = 60_000;

/**
 * Claims `claim(storage)` from every storage at once, round after round, until a round
 * claims nothing; returns everything claimed, with duplicates kept so that tests can see them.
 */
async function claimInRounds<T>(storages: Storage[], claim: (storage: Storage) => Promise<T[]>): Promise<T[]> {
  const all: T[] = [];
  for (;;) {
    const round = (await Promise.all(storages.map(claim))).flat();
    if (round.length === 0) return all;
    all.push(...round);
  }
}

/**
 * Two storages on one database claim at the same time, many rounds over: a task, a due
 * schedule or a lost ledger row is never handed to both.
 */
export function describeConcurrentClaims(open: OpenStorage, openSecond: () => Promise<Storage>): void {
  describe('concurrent claims from two connections', () => {
    const storage = useStorage(open, 'each');
    let storages: Storage[] = [];
    beforeEach(async () => {
      storages = [storage(), await openSecond()];
    });
    afterEach(async () => {
      await storages[1]?.close();
      storages = [];
    });

    it('never hands one task to two claimers, fresh or after its lease expired', async () => {
      const workflowName = uniqueName();
      const pipelines = Array.from({ length: 40 }, () => newPipeline(workflowName, DIAMOND));
      for (const pipeline of pipelines) await storage().executions.createPipeline(pipeline);
      const ready = pipelines.flatMap((pipeline) => pipeline.tasks.filter((task) => task.pendingDeps === 0));
      const registered = [{ workflowName, taskIds: Object.keys(DIAMOND) }];
      const claimAt = (now: Date) => (from: Storage) =>
        from.executions.claimTasks({ runnerId: uniqueName('runner'), registered, limit: 7, leaseMs: LEASE_MS, now });

      const fresh = await claimInRounds(storages, claimAt(at(0)));
      expect(fresh.map((c) => c.task.id).sort()).toEqual(ready.map((task) => task.id).sort());
      expect(fresh.every((c) => !c.leaseExpired && c.task.attempt === 1)).toBe(true);

      const takenOver = await claimInRounds(storages, claimAt(at(LEASE_MS + 1)));
      expect(takenOver.map((c) => c.task.id).sort()).toEqual(ready.map((task) => task.id).sort());
      expect(takenOver.every((c) => c.leaseExpired && c.task.attempt === 2 && c.task.failedAttempts === 1)).toBe(true);
    });

    it('never plans one due schedule twice, tick after tick', async () => {
      const workflowName = uniqueName();
      const schedules = Array.from({ length: 20 }, (_, i) => scheduleRow({ workflowName, nextRunAt: at(i) }));
      for (const schedule of schedules) await storage().cron.insertSchedule(schedule);
      const planned: string[] = [];
      const plan = (schedule: ScheduleRow) => {
        const due = schedule.nextRunAt!;
        planned.push(`${schedule.id}@${due.toISOString()}`);
        return {
          occurrences: [occurrence(schedule, due)],
          nextRunAt: new Date(due.getTime() + MINUTE),
          lastRunAt: due,
        };
      };
      const ticks = 5;
      const claimed = [];
      for (let tick = 0; tick < ticks; tick++) {
        const now = at(tick * MINUTE + 100);
        claimed.push(
          ...(await claimInRounds(storages, (from) =>
            from.cron.claimDueSchedules({ now, workflowNames: [workflowName], limit: 3, plan }),
          )),
        );
      }
      const expected = schedules.flatMap((schedule) =>
        Array.from(
          { length: ticks },
          (_, tick) => occurrence(schedule, at(tick * MINUTE + schedules.indexOf(schedule))).id,
        ),
      );
      expect(planned).toHaveLength(expected.length);
      expect(new Set(planned).size).toBe(expected.length);
      expect(claimed.map((row) => row.id).sort()).toEqual(expected.sort());
      for (const schedule of schedules) {
        expect(await storage().cron.getSchedule(schedule.id)).toMatchObject({ version: 1 + ticks });
      }
    });

    it('never leases one lost ledger row to two recoverers', async () => {
      const schedule = scheduleRow({ workflowName: uniqueName() });
      const rows = Array.from({ length: 60 }, (_, i) => occurrence(schedule, at(i * MINUTE)));
      await storage().cron.insertOccurrences(rows);
      const claimed = await claimInRounds(storages, (from) =>
        from.cron.claimLostOccurrences({
          now: at(2 * 60 * MINUTE),
          lostBefore: at(2 * 60 * MINUTE),
          workflowNames: [schedule.workflowName],
          limit: 7,
          runnerId: uniqueName('runner'),
          leaseMs: 30_000,
        }),
      );
      expect(claimed.map((lost) => lost.row.id).sort()).toEqual(rows.map((row) => row.id).sort());
      expect(claimed.every((lost) => lost.row.recoveryAttempts === 1)).toBe(true);
    });

    it('never deadlocks when two writers send the same idempotency keys in opposite orders', async () => {
      const workflowName = uniqueName();
      const rounds = 50;
      const rejected: string[] = [];
      for (let round = 0; round < rounds; round++) {
        const keys = Array.from({ length: 8 }, (_, i) => `${workflowName}-${round}-${i}`);
        const orders = [keys, [...keys].reverse()];
        // Both modes of the port: executeAsyncMany's all-or-nothing batch and executeAsync's group commit.
        const options = { allOrNothing: round % 2 === 0 };
        const outcomes = await Promise.allSettled(
          storages.map((from, writer) =>
            from.executions.createPipelines(
              [
                ...orders[writer]!.map((idempotencyKey) => newPipeline(workflowName, SINGLE, { idempotencyKey })),
                newPipeline(workflowName, SINGLE),
              ],
              options,
            ),
          ),
        );
        const answers = [];
        for (const [writer, outcome] of outcomes.entries()) {
          if (outcome.status === 'rejected') {
            rejected.push(String(outcome.reason));
            continue;
          }
          // In request order, whatever order the adapter wrote them in.
          expect(outcome.value.map((result) => result.pipeline.idempotencyKey)).toEqual([...orders[writer]!, null]);
          answers.push(...outcome.value.slice(0, keys.length));
        }
        for (const key of keys) {
          const holder = await storage().executions.getPipelineByIdempotencyKey(key);
          const forKey = answers.filter((result) => result.pipeline.idempotencyKey === key);
          expect(forKey.map((result) => result.pipeline.id)).toEqual(forKey.map(() => holder?.id));
          expect(forKey.filter((result) => result.created)).toHaveLength(1);
        }
      }
      expect(rejected).toEqual([]);
    });
  });
}
