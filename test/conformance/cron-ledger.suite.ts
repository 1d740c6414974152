import { type ClaimLostRequest, type NewCronExecution, newId, type ScheduleRow } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import {
  at,
  completed,
  type OpenStorage,
  occurrence,
  scheduleRow,
  storedOccurrence,
  T0,
  uniqueName,
  useStorage,
  workflowFixture,
} from './fixtures.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const LOST_BEFORE = at(10 * MINUTE);
const RECOVERY_NOW = at(11 * MINUTE);
const RECOVERY_LEASE_MS = 30_000;

/** A schedule row of a workflow no other test uses (not stored unless a test stores it). */
function freshSchedule(overrides: Partial<ScheduleRow> = {}): ScheduleRow {
  return scheduleRow({ workflowName: uniqueName(), ...overrides });
}

/**
 * CronStore: the ledger of occurrences, its recovery and its statistics. Tests share one
 * database per block and stay apart by workflow names and schedule ids of their own;
 * whole-table counts get a fresh database each.
 */
export function describeCronLedger(open: OpenStorage): void {
  describe('CronStore ledger', () => {
    describe('per schedule', () => {
      const storage = useStorage(open, 'all');
      const store = () => storage().cron;
      const insert = async (rows: NewCronExecution[]) => store().insertOccurrences(rows);
      /** Claims lost rows of `schedule`'s workflow for `runnerId` at `now`. */
      const claimLost = (schedule: ScheduleRow, runnerId: string, overrides: Partial<ClaimLostRequest> = {}) =>
        store().claimLostOccurrences({
          now: RECOVERY_NOW,
          lostBefore: LOST_BEFORE,
          workflowNames: [schedule.workflowName],
          limit: 10,
          runnerId,
          leaseMs: RECOVERY_LEASE_MS,
          ...overrides,
        });

      describe('insertOccurrences and getOccurrence', () => {
        it('inserts new rows as claimed occurrences with empty recovery fields', async () => {
          const schedule = freshSchedule({ context: { region: 'eu' } });
          const rows = [
            occurrence(schedule, T0, { fireAt: at(250), claimedAt: at(-5), claimedBy: 'runner-a' }),
            occurrence(schedule, at(MINUTE), { source: 'backfill' }),
          ];
          const result = await insert(rows);
          expect(result.existing).toBe(0);
          expect(result.claimed.sort(byScheduledTime)).toEqual(rows.map(storedOccurrence));
          expect(await store().getOccurrence(rows[0]!.id)).toEqual(storedOccurrence(rows[0]!));
          expect(await store().getOccurrence(newId())).toBeNull();
        });

        it('records rows that are not claimed without returning them', async () => {
          const schedule = freshSchedule();
          const skipped = occurrence(schedule, T0, { status: 'skipped' });
          const missed = occurrence(schedule, at(MINUTE), { status: 'missed', source: 'catchup', missedCount: 5 });
          expect(await insert([skipped, missed])).toEqual({ claimed: [], existing: 0 });
          expect(await store().getOccurrence(skipped.id)).toEqual(storedOccurrence(skipped));
          expect(await store().getOccurrence(missed.id)).toEqual(storedOccurrence(missed));
        });

        it('counts slots that already have a row as existing and leaves those rows unchanged', async () => {
          const schedule = freshSchedule();
          const first = occurrence(schedule, T0);
          await insert([first]);
          const sameId = occurrence(schedule, T0, { claimedBy: 'r2', source: 'backfill' });
          const sameSlot = occurrence(schedule, T0, { id: newId(), claimedBy: 'r3', source: 'catchup' });
          const fresh = occurrence(schedule, at(MINUTE));
          expect(await insert([sameId, sameSlot, fresh])).toEqual({ claimed: [storedOccurrence(fresh)], existing: 2 });
          expect(await store().getOccurrence(first.id)).toEqual(storedOccurrence(first));
          expect(await store().getOccurrence(sameSlot.id)).toBeNull();
        });

        it('reclaims a missed or abandoned slot without a pipeline for a backfill, and nothing else', async () => {
          const schedule = freshSchedule();
          const missed = occurrence(schedule, T0, { status: 'missed', source: 'catchup', missedCount: 3 });
          const abandoned = occurrence(schedule, at(MINUTE), { status: 'abandoned' });
          const handedOff = occurrence(schedule, at(2 * MINUTE));
          const missedByPolicy = occurrence(schedule, at(3 * MINUTE), { status: 'missed', source: 'catchup' });
          await insert([missed, abandoned, handedOff, missedByPolicy]);
          await store().linkOccurrence(handedOff.id, newId(), at(2 * MINUTE + 5));
          const onTime = await insert([occurrence(schedule, at(3 * MINUTE), { source: 'schedule' })]);
          expect(onTime).toEqual({ claimed: [], existing: 1 });

          const backfill = (time: Date) =>
            occurrence(schedule, time, {
              source: 'backfill',
              claimedAt: at(HOUR),
              claimedBy: 'admin',
              fireAt: at(HOUR),
            });
          const times = [T0, at(MINUTE), at(2 * MINUTE), at(4 * MINUTE)];
          const result = await insert(times.map(backfill));
          expect(result.existing).toBe(1);
          expect(result.claimed.sort(byScheduledTime).map((row) => [row.id, row.scheduledTime])).toEqual([
            [missed.id, T0],
            [abandoned.id, at(MINUTE)],
            [occurrence(schedule, at(4 * MINUTE)).id, at(4 * MINUTE)],
          ]);
          for (const row of result.claimed) {
            expect(row).toMatchObject({
              status: 'claimed',
              source: 'backfill',
              claimedAt: at(HOUR),
              claimedBy: 'admin',
              fireAt: at(HOUR),
              pipelineExecutionId: null,
              recoveryLeaseOwner: null,
              abandonReason: null,
            });
            expect(await store().getOccurrence(row.id)).toEqual(row);
          }
          expect(await store().getOccurrence(handedOff.id)).toMatchObject({ status: 'handed_off', source: 'schedule' });
          expect(await store().getOccurrence(missedByPolicy.id)).toEqual(storedOccurrence(missedByPolicy));
          expect(await insert(times.map(backfill))).toEqual({ claimed: [], existing: 4 });
        });
        it('resets the recovery attempts of an abandoned row a backfill reclaims', async () => {
          const schedule = freshSchedule();
          const row = occurrence(schedule, T0);
          await insert([row]);
          const [lost] = await claimLost(schedule, 'r1');
          expect(lost!.row.recoveryAttempts).toBe(1);
          await store().finishRecovery(row.id, 'r1', { status: 'abandoned', reason: 'gave up' }, RECOVERY_NOW);
          const backfill = occurrence(schedule, T0, { source: 'backfill', claimedAt: at(HOUR), fireAt: at(HOUR) });
          const { claimed } = await insert([backfill]);
          expect(claimed).toHaveLength(1);
          expect(claimed[0]).toMatchObject({ id: row.id, status: 'claimed', recoveryAttempts: 0, abandonReason: null });
          expect(await store().getOccurrence(row.id)).toMatchObject({ recoveryAttempts: 0 });
        });
      });

      describe('linkOccurrence', () => {
        it('hands a claimed row off to its pipeline once', async () => {
          const schedule = freshSchedule();
          const row = occurrence(schedule, T0);
          const missed = occurrence(schedule, at(MINUTE), { status: 'missed' });
          await insert([row, missed]);
          const pipelineId = newId();
          expect(await store().linkOccurrence(row.id, pipelineId, at(7))).toBe(true);
          const linked = {
            ...storedOccurrence(row),
            status: 'handed_off',
            pipelineExecutionId: pipelineId,
            handedOffAt: at(7),
          };
          expect(await store().getOccurrence(row.id)).toEqual(linked);
          expect(await store().linkOccurrence(row.id, newId(), at(8))).toBe(false);
          expect(await store().getOccurrence(row.id)).toEqual(linked);
          expect(await store().linkOccurrence(missed.id, newId(), at(8))).toBe(false);
          expect(await store().getOccurrence(missed.id)).toEqual(storedOccurrence(missed));
          expect(await store().linkOccurrence(newId(), newId(), at(8))).toBe(false);
        });
      });

      describe('claimLostOccurrences', () => {
        it('claims only claimed rows of registered workflows fired before lostBefore, counting the attempt', async () => {
          const schedule = freshSchedule();
          await store().insertSchedule(schedule);
          const lost = occurrence(schedule, T0);
          const atThreshold = occurrence(schedule, LOST_BEFORE);
          const recent = occurrence(schedule, at(10 * MINUTE + 1));
          const handedOff = occurrence(schedule, at(MINUTE));
          const skipped = occurrence(schedule, at(2 * MINUTE), { status: 'skipped' });
          const otherWorkflow = occurrence(freshSchedule(), T0);
          await insert([lost, atThreshold, recent, handedOff, skipped, otherWorkflow]);
          await store().linkOccurrence(handedOff.id, newId(), at(MINUTE));
          const claimed = await claimLost(schedule, 'r1');
          const leased = {
            ...storedOccurrence(lost),
            recoveryAttempts: 1,
            recoveryLeaseOwner: 'r1',
            recoveryLeaseExpiresAt: new Date(RECOVERY_NOW.getTime() + RECOVERY_LEASE_MS),
          };
          expect(claimed).toEqual([{ row: leased, schedule }]);
          expect(await store().getOccurrence(lost.id)).toEqual(leased);
          expect(await store().getOccurrence(otherWorkflow.id)).toEqual(storedOccurrence(otherWorkflow));
        });

        it('hands over the schedule as null once it was deleted', async () => {
          const schedule = freshSchedule();
          await store().insertSchedule(schedule);
          await insert([occurrence(schedule, T0)]);
          await store().deleteSchedule(schedule.id);
          const [lost] = await claimLost(schedule, 'r1');
          expect(lost).toMatchObject({ row: { scheduleId: schedule.id, recoveryAttempts: 1 }, schedule: null });
        });

        it('gives a row to no second recoverer while its lease lives, and to the next one after', async () => {
          const schedule = freshSchedule();
          const row = occurrence(schedule, T0);
          await insert([row]);
          expect(await claimLost(schedule, 'r1')).toHaveLength(1);
          expect(await claimLost(schedule, 'r2')).toEqual([]);
          const leaseEnd = RECOVERY_NOW.getTime() + RECOVERY_LEASE_MS;
          expect(await claimLost(schedule, 'r2', { now: new Date(leaseEnd - 1) })).toEqual([]);
          const [takeover] = await claimLost(schedule, 'r2', { now: new Date(leaseEnd + 1) });
          expect(takeover!.row).toMatchObject({ id: row.id, recoveryAttempts: 2, recoveryLeaseOwner: 'r2' });
          expect(await store().finishRecovery(row.id, 'r1', { status: 'abandoned', reason: 'late' }, at(HOUR))).toBe(
            false,
          );
          expect(await store().getOccurrence(row.id)).toEqual(takeover!.row);
        });

        it('claims at most limit rows', async () => {
          const schedule = freshSchedule();
          await insert([0, 1, 2].map((n) => occurrence(schedule, at(n * MINUTE))));
          expect(await claimLost(schedule, 'r1', { limit: 2 })).toHaveLength(2);
          expect(await claimLost(schedule, 'r1', { limit: 2 })).toHaveLength(1);
        });
      });

      describe('finishRecovery', () => {
        /** A lost row of a fresh schedule, claimed for recovery by r1. */
        const claimedForRecovery = async () => {
          const schedule = freshSchedule();
          await insert([occurrence(schedule, T0)]);
          const [lost] = await claimLost(schedule, 'r1');
          return { schedule, row: lost!.row };
        };

        it('links a recovered row to its pipeline and releases the lease', async () => {
          const { row } = await claimedForRecovery();
          const pipelineId = newId();
          const outcome = { status: 'linked', pipelineExecutionId: pipelineId } as const;
          expect(await store().finishRecovery(row.id, 'r1', outcome, at(HOUR))).toBe(true);
          expect(await store().getOccurrence(row.id)).toEqual({
            ...row,
            status: 'handed_off',
            pipelineExecutionId: pipelineId,
            handedOffAt: at(HOUR),
            recovered: true,
            recoveryLeaseOwner: null,
            recoveryLeaseExpiresAt: null,
          });
        });

        it('abandons a row with its reason', async () => {
          const { row } = await claimedForRecovery();
          const outcome = { status: 'abandoned', reason: 'schedule disabled' } as const;
          expect(await store().finishRecovery(row.id, 'r1', outcome, at(HOUR))).toBe(true);
          expect(await store().getOccurrence(row.id)).toEqual({
            ...row,
            status: 'abandoned',
            abandonReason: 'schedule disabled',
            recoveryLeaseOwner: null,
            recoveryLeaseExpiresAt: null,
          });
        });

        it('schedules a retry, refunding the attempt when asked, and holds the row until then', async () => {
          const { schedule, row } = await claimedForRecovery();
          const retryAt = at(HOUR);
          const retry = (refundAttempt: boolean) =>
            ({ status: 'retry', nextRecoveryAt: retryAt, refundAttempt }) as const;
          expect(await store().finishRecovery(row.id, 'r1', retry(true), RECOVERY_NOW)).toBe(true);
          const waiting = {
            ...row,
            recoveryAttempts: 0,
            nextRecoveryAt: retryAt,
            recoveryLeaseOwner: null,
            recoveryLeaseExpiresAt: null,
          };
          expect(await store().getOccurrence(row.id)).toEqual(waiting);
          expect(await claimLost(schedule, 'r2', { now: new Date(retryAt.getTime() - 1) })).toEqual([]);
          const [again] = await claimLost(schedule, 'r2', { now: new Date(retryAt.getTime() + 1) });
          expect(again!.row).toMatchObject({ recoveryAttempts: 1, recoveryLeaseOwner: 'r2' });
          expect(await store().finishRecovery(row.id, 'r2', retry(false), at(HOUR + 1))).toBe(true);
          expect(await store().getOccurrence(row.id)).toMatchObject({ status: 'claimed', recoveryAttempts: 1 });
        });

        it('refuses a runner that does not hold the recovery lease and writes nothing', async () => {
          const { row } = await claimedForRecovery();
          const linked = { status: 'linked', pipelineExecutionId: newId() } as const;
          expect(await store().finishRecovery(row.id, 'r2', linked, at(HOUR))).toBe(false);
          expect(await store().finishRecovery(newId(), 'r1', linked, at(HOUR))).toBe(false);
          expect(await store().getOccurrence(row.id)).toEqual(row);
          expect(await store().finishRecovery(row.id, 'r1', linked, at(HOUR))).toBe(true);
          expect(await store().finishRecovery(row.id, 'r1', { status: 'abandoned', reason: 'x' }, at(HOUR))).toBe(
            false,
          );
          expect(await store().getOccurrence(row.id)).toMatchObject({ status: 'handed_off', abandonReason: null });
        });
      });

      describe('listOccurrences', () => {
        it("lists a schedule's ledger newest scheduled time first, a page at a time", async () => {
          const schedule = freshSchedule();
          const times = [at(MINUTE), at(3 * MINUTE), at(2 * MINUTE)];
          await insert(times.map((time) => occurrence(schedule, time)));
          await insert([occurrence(freshSchedule(), at(4 * MINUTE))]);
          const listed = await store().listOccurrences(schedule.id, 10, 0);
          expect(listed.map((row) => row.scheduledTime)).toEqual([at(3 * MINUTE), at(2 * MINUTE), at(MINUTE)]);
          expect(listed[0]).toEqual(storedOccurrence(occurrence(schedule, at(3 * MINUTE))));
          expect((await store().listOccurrences(schedule.id, 1, 1)).map((row) => row.scheduledTime)).toEqual([
            at(2 * MINUTE),
          ]);
          expect(await store().listOccurrences(schedule.id, 10, 3)).toEqual([]);
          expect(await store().listOccurrences(newId(), 10, 0)).toEqual([]);
        });
      });
    });

    describe('whole tables', () => {
      const storage = useStorage(open, 'each');
      const store = () => storage().cron;

      it('counts the ledger since an instant, with lost rows and handoff delays', async () => {
        const schedule = freshSchedule();
        const delays = [100, 300, 200];
        const handedOff = delays.map((_, i) => occurrence(schedule, at(i * MINUTE)));
        const rows = [
          ...handedOff,
          occurrence(schedule, at(3 * MINUTE)),
          occurrence(schedule, at(4 * MINUTE), { fireAt: LOST_BEFORE }),
          occurrence(schedule, at(5 * MINUTE), { status: 'skipped' }),
          occurrence(schedule, at(6 * MINUTE), { status: 'missed', source: 'catchup', missedCount: 1 }),
          occurrence(schedule, at(7 * MINUTE), { status: 'abandoned' }),
          occurrence(schedule, at(-1), { status: 'skipped' }),
          occurrence(schedule, at(-MINUTE)),
        ];
        expect(await store().occurrenceStats(T0, LOST_BEFORE)).toEqual({
          total: 0,
          handedOff: 0,
          lost: 0,
          skipped: 0,
          missed: 0,
          abandoned: 0,
          meanDelayMs: null,
          p99DelayMs: null,
        });
        await store().insertOccurrences(rows);
        for (const [i, row] of handedOff.entries()) {
          await store().linkOccurrence(row.id, newId(), new Date(row.scheduledTime.getTime() + delays[i]!));
        }
        expect(await store().occurrenceStats(T0, LOST_BEFORE)).toEqual({
          total: 8,
          handedOff: 3,
          lost: 1,
          skipped: 1,
          missed: 1,
          abandoned: 1,
          meanDelayMs: 200,
          p99DelayMs: 300,
        });
        expect(await store().occurrenceStats(at(3 * MINUTE), at(3 * MINUTE))).toMatchObject({
          total: 5,
          handedOff: 0,
          lost: 0,
          meanDelayMs: null,
          p99DelayMs: null,
        });
      });

      it('leaves backfilled and manual hand-offs out of the delays, and counts them as handed off', async () => {
        const schedule = freshSchedule();
        const lagged = [
          { row: occurrence(schedule, at(0)), delayMs: 100 },
          { row: occurrence(schedule, at(MINUTE), { source: 'catchup' }), delayMs: 300 },
        ];
        // Handed off hours after their slot because someone asked then, not because anything was late.
        const requested = [
          { row: occurrence(schedule, at(2 * MINUTE), { source: 'backfill' }), delayMs: 2 * HOUR },
          { row: occurrence(schedule, at(3 * MINUTE), { source: 'manual' }), delayMs: HOUR },
        ];
        await store().insertOccurrences([...lagged, ...requested].map(({ row }) => row));
        for (const { row, delayMs } of [...lagged, ...requested]) {
          await store().linkOccurrence(row.id, newId(), new Date(row.scheduledTime.getTime() + delayMs));
        }
        expect(await store().occurrenceStats(T0, LOST_BEFORE)).toMatchObject({
          total: 4,
          handedOff: 4,
          meanDelayMs: 200,
          p99DelayMs: 300,
        });
        // With only requested hand-offs in the window there is no fire lag at all.
        expect(await store().occurrenceStats(at(2 * MINUTE), LOST_BEFORE)).toMatchObject({
          handedOff: 2,
          meanDelayMs: null,
          p99DelayMs: null,
        });
      });

      it('counts claimed rows fired before the lost cutoff, whatever their scheduled time', async () => {
        const schedule = freshSchedule();
        const handedOff = occurrence(schedule, at(0));
        await store().insertOccurrences([
          handedOff,
          occurrence(schedule, at(-24 * 60 * MINUTE), { fireAt: at(-24 * 60 * MINUTE) }),
          occurrence(schedule, at(MINUTE), { fireAt: at(10 * MINUTE - 1) }),
          occurrence(schedule, at(2 * MINUTE), { fireAt: LOST_BEFORE }),
          occurrence(schedule, at(3 * MINUTE), { status: 'abandoned' }),
        ]);
        await store().linkOccurrence(handedOff.id, newId(), at(1));
        expect(await store().countLostOccurrences(LOST_BEFORE)).toBe(2);
        expect(await store().countLostOccurrences(at(-24 * 60 * MINUTE))).toBe(0);
      });

      it('gives a slot claimed late the whole lost threshold from its claim', async () => {
        const schedule = freshSchedule();
        await store().insertOccurrences([
          occurrence(schedule, at(0), { claimedAt: LOST_BEFORE }),
          occurrence(schedule, at(MINUTE), { claimedAt: at(10 * MINUTE - 1) }),
        ]);
        expect(await store().countLostOccurrences(LOST_BEFORE)).toBe(1);
        expect(await store().occurrenceStats(T0, LOST_BEFORE)).toMatchObject({ lost: 1 });
        const claimed = await store().claimLostOccurrences({
          now: RECOVERY_NOW,
          lostBefore: LOST_BEFORE,
          workflowNames: [schedule.workflowName],
          limit: 10,
          runnerId: 'recoverer',
          leaseMs: RECOVERY_LEASE_MS,
        });
        expect(claimed.map((lost) => lost.row.scheduledTime)).toEqual([at(MINUTE)]);
      });

      it('takes the p99 delay as the value at rank ceil(0.99 n) among n handoffs', async () => {
        const schedule = freshSchedule();
        const rows = Array.from({ length: 100 }, (_, i) => occurrence(schedule, at(i * MINUTE)));
        await store().insertOccurrences(rows);
        // Delays 1..100 ms, linked in an order unrelated to their size.
        for (const [i, row] of rows.entries()) {
          const delayMs = ((i * 37) % 100) + 1;
          await store().linkOccurrence(row.id, newId(), new Date(row.scheduledTime.getTime() + delayMs));
        }
        expect(await store().occurrenceStats(T0, T0)).toMatchObject({
          handedOff: 100,
          meanDelayMs: 50.5,
          p99DelayMs: 99,
        });
      });

      it('counts recovery attempts, successful recoveries and abandoned recoveries', async () => {
        const schedule = freshSchedule();
        const [recovered, abandoned, refunded] = [0, 1, 2].map((n) => occurrence(schedule, at(n * MINUTE)));
        await store().insertOccurrences([recovered!, abandoned!, refunded!]);
        expect(await store().recoveryCounts()).toEqual({
          totalRecoveryAttempts: 0,
          successfulRecoveries: 0,
          abandonedRecoveries: 0,
        });
        const request = {
          lostBefore: LOST_BEFORE,
          workflowNames: [schedule.workflowName],
          limit: 10,
          runnerId: 'r1',
          leaseMs: RECOVERY_LEASE_MS,
        };
        expect(await store().claimLostOccurrences({ ...request, now: RECOVERY_NOW })).toHaveLength(3);
        const retryLater = { status: 'retry', nextRecoveryAt: RECOVERY_NOW, refundAttempt: false } as const;
        await store().finishRecovery(
          recovered!.id,
          'r1',
          { status: 'linked', pipelineExecutionId: newId() },
          RECOVERY_NOW,
        );
        await store().finishRecovery(abandoned!.id, 'r1', retryLater, RECOVERY_NOW);
        const refund = { status: 'retry', nextRecoveryAt: at(2 * HOUR), refundAttempt: true } as const;
        await store().finishRecovery(refunded!.id, 'r1', refund, RECOVERY_NOW);
        const secondRound = await store().claimLostOccurrences({ ...request, now: at(HOUR) });
        expect(secondRound.map((lost) => lost.row.id)).toEqual([abandoned!.id]);
        await store().finishRecovery(
          abandoned!.id,
          'r1',
          { status: 'abandoned', reason: 'too many attempts' },
          at(HOUR),
        );
        expect(await store().recoveryCounts()).toEqual({
          totalRecoveryAttempts: 3,
          successfulRecoveries: 1,
          abandonedRecoveries: 1,
        });
      });

      it('deletes ledger rows that became terminal before the cutoff and are not claimed, a batch at a time', async () => {
        const schedule = freshSchedule();
        const cutoff = at(10 * MINUTE);
        const deleted = [
          occurrence(schedule, at(0)),
          occurrence(schedule, at(MINUTE), { status: 'skipped' }),
          occurrence(schedule, at(2 * MINUTE), { status: 'missed', source: 'catchup', missedCount: 2 }),
          occurrence(schedule, at(3 * MINUTE), { status: 'abandoned' }),
        ];
        const kept = [
          occurrence(schedule, at(4 * MINUTE)),
          occurrence(schedule, cutoff, { status: 'skipped' }),
          occurrence(schedule, at(11 * MINUTE), { status: 'skipped' }),
        ];
        await store().insertOccurrences([...deleted, ...kept]);
        await store().linkOccurrence(deleted[0]!.id, newId(), at(1));
        expect(await store().deleteTerminalOccurrences(cutoff, 3)).toBe(3);
        expect(await store().deleteTerminalOccurrences(cutoff, 3)).toBe(1);
        expect(await store().deleteTerminalOccurrences(cutoff, 3)).toBe(0);
        for (const row of deleted) expect(await store().getOccurrence(row.id)).toBeNull();
        expect((await store().listOccurrences(schedule.id, 10, 0)).map((row) => row.id)).toEqual(
          kept.map((row) => row.id).reverse(),
        );
      });

      it('judges ledger rows by when they became terminal and keeps those whose pipeline is unfinished', async () => {
        const schedule = freshSchedule();
        const wf = workflowFixture(storage, { only: [] });
        const cutoff = at(HOUR);
        // A backfill of old slots, claimed and handed off after the cutoff: its rows are fresh, whatever their slot.
        const freshBackfill = occurrence(schedule, at(0), { source: 'backfill', claimedAt: at(2 * HOUR) });
        // Handed off before the cutoff, its pipeline still running: the overlap check reads this row.
        const stillRunning = occurrence(schedule, at(MINUTE));
        // Handed off before the cutoff, its pipeline finished: the only one retention may take.
        const finished = occurrence(schedule, at(2 * MINUTE));
        await store().insertOccurrences([freshBackfill, stillRunning, finished]);
        const running = await wf.create({ idempotencyKey: stillRunning.id, scheduledTime: at(MINUTE) });
        const done = await wf.create({ idempotencyKey: finished.id, scheduledTime: at(2 * MINUTE) });
        await wf.claim('r1', at(MINUTE + 1), { leaseMs: 10 * HOUR });
        await storage().executions.cancelPipeline(done.id, at(2 * MINUTE + 2));
        await store().linkOccurrence(freshBackfill.id, newId(), at(2 * HOUR + 1));
        await store().linkOccurrence(stillRunning.id, running.id, at(MINUTE + 1));
        await store().linkOccurrence(finished.id, done.id, at(2 * MINUTE + 1));
        expect(await storage().executions.getPipeline(running.id)).toMatchObject({ status: 'running' });

        expect(await store().deleteTerminalOccurrences(cutoff, 100)).toBe(1);
        expect(await store().getOccurrence(finished.id)).toBeNull();
        expect(await store().getOccurrence(freshBackfill.id)).toMatchObject({ status: 'handed_off' });
        expect(await store().getOccurrence(stillRunning.id)).toMatchObject({ status: 'handed_off' });
      });

      it('keeps a finished cron pipeline while its ledger row is still claimed, for recovery to link', async () => {
        const schedule = freshSchedule();
        const wf = workflowFixture(storage, { only: [] });
        const claimed = occurrence(schedule, at(0));
        const linked = occurrence(schedule, at(MINUTE));
        await store().insertOccurrences([claimed, linked]);
        // The runner died after executeAsync committed and before phase 2; the pipeline completed elsewhere.
        const unlinked = await wf.create({ idempotencyKey: claimed.id, scheduledTime: at(0) });
        const handedOff = await wf.create({ idempotencyKey: linked.id, scheduledTime: at(MINUTE) });
        await store().linkOccurrence(linked.id, handedOff.id, at(MINUTE));
        const plain = await wf.create({ idempotencyKey: 'not-a-uuid' });
        await wf.runAll(at(2 * MINUTE), completed());

        expect(await storage().executions.deleteTerminalPipelines(at(HOUR), 100)).toBe(2);
        expect(await storage().executions.getPipeline(unlinked.id)).toMatchObject({ status: 'completed' });
        expect(await storage().executions.getPipeline(handedOff.id)).toBeNull();
        expect(await storage().executions.getPipeline(plain.id)).toBeNull();
        expect(await store().findOccurrencePipeline(claimed.id)).toBe(unlinked.id);
        // Once linked (or abandoned), the row no longer holds the pipeline back.
        await store().linkOccurrence(claimed.id, unlinked.id, at(HOUR));
        expect(await storage().executions.deleteTerminalPipelines(at(HOUR), 100)).toBe(1);
      });

      it('finds the pipeline created under an occurrence id as idempotency key, or null', async () => {
        const schedule = freshSchedule();
        const row = occurrence(schedule, at(0));
        await store().insertOccurrences([row]);
        expect(await store().findOccurrencePipeline(row.id)).toBeNull();
        const pipeline = await workflowFixture(storage, { only: [] }).create({ idempotencyKey: row.id });
        expect(await store().findOccurrencePipeline(row.id)).toBe(pipeline.id);
      });
    });
  });
}

function byScheduledTime(left: { scheduledTime: Date }, right: { scheduledTime: Date }): number {
  return left.scheduledTime.getTime() - right.scheduledTime.getTime();
}
