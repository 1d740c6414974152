import {
  type ClaimDueRequest,
  type CronExecutionRow,
  type DueScheduleState,
  type JsonObject,
  type NewCronExecution,
  newId,
  occurrenceId,
  ScheduleConflictError,
  type SchedulePlan,
  type ScheduleRow,
  ValidationError,
} from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import {
  at,
  newPipeline,
  type OpenStorage,
  occurrence,
  scheduleRow,
  storedOccurrence,
  T0,
  uniqueName,
  useStorage,
} from './fixtures.js';

const MINUTE = 60_000;

/** A plan that claims the schedule's due slot and moves it one minute on; records every call. */
function planOneSlot() {
  const calls: Array<{ schedule: ScheduleRow; state: DueScheduleState }> = [];
  const plan = (schedule: ScheduleRow, state: DueScheduleState): SchedulePlan => {
    calls.push({ schedule, state });
    const due = schedule.nextRunAt!;
    return {
      occurrences: [occurrence(schedule, due, { claimedAt: due, claimedBy: 'r1' })],
      nextRunAt: new Date(due.getTime() + MINUTE),
      lastRunAt: due,
    };
  };
  return { plan, calls };
}

/**
 * CronStore: schedules and the claim of due ones. Tests share one database per block and
 * stay apart by workflow and schedule names of their own; whole-table listings get a fresh
 * database each.
 */
export function describeCronSchedules(open: OpenStorage): void {
  describe('CronStore schedules', () => {
    describe('per workflow', () => {
      const storage = useStorage(open, 'all');
      const store = () => storage().cron;
      /** Inserts a schedule of a workflow no other test uses. */
      const insert = async (overrides: Partial<ScheduleRow> = {}) => {
        const { schedule, created } = await store().insertSchedule(
          scheduleRow({ workflowName: uniqueName(), ...overrides }),
        );
        expect(created).toBe(true);
        return schedule;
      };

      /** Claims the due slot of `row`'s workflow at `now` with `plan` (and an in-transaction handoff). */
      const claimScheduleAt = (
        row: ScheduleRow,
        now: Date,
        plan: ClaimDueRequest['plan'],
        prepareHandoff?: ClaimDueRequest['prepareHandoff'],
      ) =>
        store().claimDueSchedules({
          now,
          workflowNames: [row.workflowName],
          limit: 10,
          plan,
          ...(prepareHandoff !== undefined && { prepareHandoff }),
        });

      describe('insertSchedule, getSchedule and getScheduleByName', () => {
        it('stores every field and reads it back unchanged, by id and by name', async () => {
          const row = scheduleRow({
            name: uniqueName('nightly'),
            workflowName: uniqueName(),
            cronExpression: '0 30 2 * * MON-FRI',
            timezone: 'America/New_York',
            enabled: false,
            context: { region: 'eu', limits: { max: 3, tags: ['a', 'b'] } },
            catchupPolicy: 'run_all',
            overlapPolicy: 'skip',
            jitterMs: 1500,
            startAt: at(-MINUTE),
            endAt: at(365 * 24 * 60 * MINUTE),
            nextRunAt: at(MINUTE),
            lastRunAt: at(-1),
            version: 7,
            createdAt: at(-2),
            updatedAt: at(-1),
          });
          expect(await store().insertSchedule(row)).toEqual({ schedule: row, created: true });
          expect(await store().getSchedule(row.id)).toEqual(row);
          expect(await store().getScheduleByName(row.name!)).toEqual(row);
        });

        it('returns the schedule holding a name instead of inserting a second one', async () => {
          const name = uniqueName('nightly');
          const first = await insert({ name });
          const second = scheduleRow({ name, workflowName: uniqueName(), cronExpression: '0 0 * * *' });
          expect(await store().insertSchedule(second)).toEqual({ schedule: first, created: false });
          expect(await store().getSchedule(second.id)).toBeNull();
          expect(await store().getScheduleByName(name)).toEqual(first);
        });

        it('stores any number of unnamed schedules', async () => {
          const first = await insert({ name: null });
          const second = await insert({ name: null });
          expect(await store().getSchedule(first.id)).toEqual(first);
          expect(await store().getSchedule(second.id)).toEqual(second);
        });

        it('returns null for an unknown id or name', async () => {
          expect(await store().getSchedule(newId())).toBeNull();
          expect(await store().getScheduleByName(uniqueName('nobody'))).toBeNull();
        });
      });

      describe('updateSchedule', () => {
        it('writes the patch when the version matches and bumps the version', async () => {
          const row = await insert({ name: uniqueName('s'), startAt: at(-1) });
          const patch = {
            name: uniqueName('renamed'),
            cronExpression: '0 * * * *',
            enabled: false,
            context: { replaced: [true] },
            startAt: null,
            nextRunAt: null,
            lastRunAt: at(5),
            updatedAt: at(6),
          };
          const updated = await store().updateSchedule(row.id, 1, patch);
          expect(updated).toEqual({ ...row, ...patch, version: 2 });
          expect(await store().getSchedule(row.id)).toEqual(updated);
          expect(await store().getScheduleByName(patch.name)).toEqual(updated);
          expect(await store().getScheduleByName(row.name!)).toBeNull();
        });

        it('returns null and writes nothing for a stale version or an unknown id', async () => {
          const row = await insert();
          const current = await store().updateSchedule(row.id, 1, { jitterMs: 10 });
          expect(await store().updateSchedule(row.id, 1, { jitterMs: 20 })).toBeNull();
          expect(await store().updateSchedule(row.id, 3, { jitterMs: 30 })).toBeNull();
          expect(await store().updateSchedule(newId(), 1, { jitterMs: 40 })).toBeNull();
          expect(await store().getSchedule(row.id)).toEqual(current);
          expect(current).toMatchObject({ jitterMs: 10, version: 2 });
        });

        it('refuses a name held by another schedule with ScheduleConflictError and keeps the row', async () => {
          const taken = uniqueName('taken');
          await insert({ name: taken });
          const row = await insert({ name: uniqueName('mine') });
          const failure = await store()
            .updateSchedule(row.id, 1, { name: taken, enabled: false })
            .catch((error: unknown) => error);
          expect(failure).toBeInstanceOf(ScheduleConflictError);
          expect((failure as ScheduleConflictError).code).toBe('SCHEDULE_CONFLICT');
          expect((failure as Error).message).toContain(taken);
          expect(await store().getSchedule(row.id)).toEqual(row);
          expect(await store().updateSchedule(row.id, 1, { name: row.name })).toMatchObject({
            name: row.name,
            version: 2,
          });
        });
      });

      describe('deleteSchedule', () => {
        it('deletes a schedule and keeps its ledger', async () => {
          const row = await insert();
          await store().insertOccurrences([occurrence(row, T0)]);
          expect(await store().deleteSchedule(row.id)).toBe(true);
          expect(await store().getSchedule(row.id)).toBeNull();
          expect(await store().deleteSchedule(row.id)).toBe(false);
          expect(await store().getOccurrence(occurrenceId(row.id, T0))).toMatchObject({ scheduleId: row.id });
          expect(await store().listOccurrences(row.id, 10, 0)).toHaveLength(1);
        });
      });

      describe('applyScheduleSync', () => {
        it('inserts, updates by compare-and-set and deletes together, keeping the ledger', async () => {
          const kept = await insert({ name: uniqueName('kept') });
          const gone = await insert({ name: uniqueName('gone') });
          await store().insertOccurrences([
            occurrence(gone, T0),
            occurrence(gone, at(1), { status: 'buffered', claimedAt: at(1) }),
          ]);
          const other = await insert({ name: uniqueName('other'), dst: { repeated: 'last', gap: 'skip' } });
          const fresh = scheduleRow({ name: uniqueName('fresh'), workflowName: uniqueName() });
          // Every kind of column: text, instant, JSON, boolean, integer, and nulls.
          const patch = {
            cronExpression: '0 * * * *',
            context: { nested: { list: [1, 'two', null] }, quote: 'it\'s "quoted"' },
            enabled: false,
            maxRuns: 3,
            note: 'a note',
            nextRunAt: at(60),
            updatedAt: at(2),
          };
          const otherPatch = { dst: null, startAt: at(-5), jitterMs: 7 };

          const applied = await store().applyScheduleSync({
            inserts: [fresh],
            updates: [
              { id: kept.id, expectedVersion: 1, patch },
              { id: other.id, expectedVersion: 1, patch: otherPatch },
            ],
            deletes: [{ id: gone.id, expectedVersion: 1 }],
          });

          expect(applied).toBe(true);
          expect(await store().getSchedule(fresh.id)).toEqual(fresh);
          expect(await store().getSchedule(kept.id)).toEqual({ ...kept, ...patch, version: 2 });
          expect(await store().getSchedule(other.id)).toEqual({ ...other, ...otherPatch, version: 2 });
          expect(await store().getSchedule(gone.id)).toBeNull();
          expect((await store().listOccurrences(gone.id, 10, 0)).map((row) => row.status).sort()).toEqual([
            'claimed',
            'skipped',
          ]);
        });

        it('inserts thousands of schedules in one sync, every column kind stored exactly', async () => {
          const workflowName = uniqueName();
          // More rows than one insert statement takes on either adapter, with each kind of column
          // varied (text, JSON with quotes, instants, booleans, integers, nulls).
          const fresh = Array.from({ length: 12_345 }, (_, index) =>
            scheduleRow({
              name: uniqueName(`bulk-${index}`),
              workflowName,
              cronExpression: `${index % 60} * * * *`,
              context: index % 2 === 0 ? { index, quote: 'it\'s "q"', list: [1, null] } : {},
              enabled: index % 3 !== 0,
              maxRuns: index % 4 === 0 ? null : index,
              dst: index % 5 === 0 ? { repeated: 'both', gap: 'skip' } : null,
              note: index % 6 === 0 ? `note ${index}` : null,
              startAt: index % 7 === 0 ? at(-index) : null,
              nextRunAt: index % 8 === 0 ? null : at(index),
            }),
          );

          expect(await store().applyScheduleSync({ inserts: fresh, updates: [], deletes: [] })).toBe(true);

          const stored = await store().listSchedules({ workflowName, limit: fresh.length + 1, offset: 0 });
          expect(stored.sort(byId)).toEqual([...fresh].sort(byId));
        });

        it('updates thousands of schedules in one sync, values shared by all and varied by row stored exactly', async () => {
          const workflowName = uniqueName();
          const rows = Array.from({ length: 2_345 }, (_, index) =>
            scheduleRow({ name: uniqueName(`many-${index}`), workflowName }),
          );
          expect(await store().applyScheduleSync({ inserts: rows, updates: [], deletes: [] })).toBe(true);
          // One set of columns, so one statement: some values the same in every row, the others varied.
          const patchOf = (index: number) => ({
            cronExpression: `${index % 60} * * * *`,
            context: (index % 2 === 0 ? { index, quote: 'it\'s "q"', list: [1, null] } : {}) as JsonObject,
            dst: index % 5 === 0 ? ({ repeated: 'both', gap: 'skip' } as const) : null,
            enabled: index % 3 !== 0,
            maxRuns: index % 4 === 0 ? null : index,
            nextRunAt: index % 8 === 0 ? null : at(index),
            note: null,
            updatedAt: at(2),
          });
          const updates = rows.map((row, index) => ({ id: row.id, expectedVersion: 1, patch: patchOf(index) }));

          expect(await store().applyScheduleSync({ inserts: [], updates, deletes: [] })).toBe(true);

          const stored = await store().listSchedules({ workflowName, limit: rows.length + 1, offset: 0 });
          const expected = rows.map((row, index) => ({ ...row, ...patchOf(index), version: 2 }));
          expect(stored.sort(byId)).toEqual(expected.sort(byId));
        });

        it('applies an empty sync as a no-op', async () => {
          expect(await store().applyScheduleSync({ inserts: [], updates: [], deletes: [] })).toBe(true);
        });

        it.each([
          ['an update', 'update'],
          ['a delete', 'delete'],
          ['an insert', 'insert'],
        ] as const)('writes nothing and returns false when %s loses a race', async (_label, loser) => {
          const updated = await insert({ name: uniqueName('updated') });
          const deleted = await insert({ name: uniqueName('deleted') });
          const taken = await insert({ name: uniqueName('taken') });
          // The losing write expects version 1 of a row a concurrent writer already moved to 2, or a name it took.
          if (loser === 'update') await store().updateSchedule(updated.id, 1, { jitterMs: 5 });
          if (loser === 'delete') await store().updateSchedule(deleted.id, 1, { jitterMs: 5 });
          const before = await Promise.all([updated, deleted, taken].map((row) => store().getSchedule(row.id)));
          const fresh = scheduleRow({ name: uniqueName('fresh'), workflowName: uniqueName() });
          const clash = scheduleRow({ name: loser === 'insert' ? taken.name : uniqueName('free') });

          const applied = await store().applyScheduleSync({
            inserts: [fresh, clash],
            updates: [{ id: updated.id, expectedVersion: 1, patch: { cronExpression: '0 * * * *' } }],
            deletes: [{ id: deleted.id, expectedVersion: 1 }],
          });

          expect(applied).toBe(false);
          expect(await store().getSchedule(fresh.id)).toBeNull();
          expect(await store().getSchedule(clash.id)).toBeNull();
          expect(await Promise.all([updated, deleted, taken].map((row) => store().getSchedule(row.id)))).toEqual(
            before,
          );
        });
      });

      describe('claimDueSchedules', () => {
        it('plans each due schedule once, inserts its rows and advances it by one version', async () => {
          const workflowName = uniqueName();
          const early = await insert({ workflowName, nextRunAt: at(0) });
          const onTime = await insert({ workflowName, nextRunAt: at(10) });
          const { plan, calls } = planOneSlot();
          const request = { now: at(10), workflowNames: [workflowName], limit: 10, plan };
          const claimed = await store().claimDueSchedules(request);
          expect(calls.map((call) => call.schedule).sort(byId)).toEqual([early, onTime].sort(byId));
          expect(calls.map((call) => call.state)).toEqual([
            { hasActiveOccurrence: false },
            { hasActiveOccurrence: false },
          ]);
          const expectedRows = [occurrence(early, at(0)), occurrence(onTime, at(10))].map(storedOccurrence);
          expect(claimed.sort(byId)).toEqual(expectedRows.sort(byId));
          for (const row of expectedRows) expect(await store().getOccurrence(row.id)).toEqual(row);
          expect(await store().getSchedule(early.id)).toEqual({
            ...early,
            nextRunAt: at(MINUTE),
            lastRunAt: at(0),
            version: 2,
            updatedAt: at(10),
          });
          expect(await store().getSchedule(onTime.id)).toMatchObject({ nextRunAt: at(10 + MINUTE), version: 2 });
          expect(await store().claimDueSchedules(request)).toEqual([]);
          expect(calls).toHaveLength(2);
        });

        it('leaves schedules that are not due, disabled, without a next run or of other workflows untouched', async () => {
          const workflowName = uniqueName();
          const untouched = [
            await insert({ workflowName, nextRunAt: at(11) }),
            await insert({ workflowName, nextRunAt: at(0), enabled: false }),
            await insert({ workflowName, nextRunAt: null }),
            await insert({ nextRunAt: at(0) }),
          ];
          const { plan, calls } = planOneSlot();
          expect(
            await store().claimDueSchedules({ now: at(10), workflowNames: [workflowName], limit: 10, plan }),
          ).toEqual([]);
          expect(await store().claimDueSchedules({ now: at(10), workflowNames: [], limit: 10, plan })).toEqual([]);
          expect(calls).toEqual([]);
          for (const row of untouched) {
            expect(await store().getSchedule(row.id)).toEqual(row);
            expect(await store().listOccurrences(row.id, 10, 0)).toEqual([]);
          }
        });

        it("probes the earliest enabled next run of the workflows up to the tick's end, claiming nothing", async () => {
          const workflowName = uniqueName();
          const untouched = [
            await insert({ workflowName, nextRunAt: at(700) }),
            await insert({ workflowName, nextRunAt: at(400) }),
            await insert({ workflowName, nextRunAt: at(200), enabled: false }),
            await insert({ workflowName, nextRunAt: null }),
            await insert({ nextRunAt: at(100) }),
          ];
          const earliest = async (untilMs: number, workflowNames = [workflowName]) =>
            (await store().probeTick({ workflowNames, until: at(untilMs) })).earliestRunAt;
          expect(await earliest(1000)).toEqual(at(400));
          expect(await earliest(400)).toEqual(at(400));
          // Nothing up to the probe's end, or no workflows: nothing found.
          expect(await earliest(300)).toBeNull();
          expect(await earliest(1000, [])).toBeNull();
          for (const row of untouched) {
            expect(await store().getSchedule(row.id)).toEqual(row);
            expect(await store().listOccurrences(row.id, 10, 0)).toEqual([]);
          }
          // A due one is the earliest, and the probe leaves it for the claim.
          const due = await insert({ workflowName, nextRunAt: at(5) });
          expect(await earliest(1000)).toEqual(at(5));
          expect(await store().getSchedule(due.id)).toEqual(due);
        });

        it('leaves a schedule untouched when its plan returns null', async () => {
          const row = await insert();
          let planned = 0;
          const plan = () => {
            planned += 1;
            return null;
          };
          const request = { now: at(10), workflowNames: [row.workflowName], limit: 10, plan };
          expect(await store().claimDueSchedules(request)).toEqual([]);
          expect(planned).toBe(1);
          expect(await store().getSchedule(row.id)).toEqual(row);
          expect(await store().listOccurrences(row.id, 10, 0)).toEqual([]);
        });

        it('returns only the claimed rows but records every planned row', async () => {
          const row = await insert({ overlapPolicy: 'skip' });
          const rows = [
            occurrence(row, at(-3 * MINUTE), { status: 'missed', source: 'catchup', missedCount: 2 }),
            occurrence(row, at(-MINUTE), { status: 'claimed', source: 'catchup' }),
            occurrence(row, at(0), { status: 'skipped' }),
          ];
          const plan = () => ({ occurrences: rows, nextRunAt: at(MINUTE), lastRunAt: at(0) });
          const claimed = await store().claimDueSchedules({
            now: at(10),
            workflowNames: [row.workflowName],
            limit: 10,
            plan,
          });
          expect(claimed).toEqual([storedOccurrence(rows[1]!)]);
          expect(await store().listOccurrences(row.id, 10, 0)).toEqual(rows.map(storedOccurrence).reverse());
        });

        it('keeps an occurrence that already has a row, and still advances the schedule', async () => {
          const row = await insert();
          const existing = occurrence(row, T0, { claimedBy: 'earlier', status: 'handed_off' });
          await store().insertOccurrences([existing]);
          const plan = () => ({
            occurrences: [occurrence(row, T0), occurrence(row, at(MINUTE))],
            nextRunAt: at(2 * MINUTE),
            lastRunAt: at(MINUTE),
          });
          const claimed = await store().claimDueSchedules({
            now: at(MINUTE),
            workflowNames: [row.workflowName],
            limit: 10,
            plan,
          });
          expect(claimed.map((r) => r.scheduledTime)).toEqual([at(MINUTE)]);
          expect(await store().getOccurrence(existing.id)).toEqual(storedOccurrence(existing));
          expect(await store().getSchedule(row.id)).toMatchObject({ nextRunAt: at(2 * MINUTE), version: 2 });
        });

        it('claims at most limit schedules, those due earliest first', async () => {
          const workflowName = uniqueName();
          const due = [
            await insert({ workflowName, nextRunAt: at(2) }),
            await insert({ workflowName, nextRunAt: at(0) }),
            await insert({ workflowName, nextRunAt: at(1) }),
          ];
          const { plan, calls } = planOneSlot();
          const claimed = await store().claimDueSchedules({
            now: at(10),
            workflowNames: [workflowName],
            limit: 2,
            plan,
          });
          expect(claimed).toHaveLength(2);
          expect(calls.map((call) => call.schedule.id).sort()).toEqual([due[1]!.id, due[2]!.id].sort());
          expect(await store().getSchedule(due[0]!.id)).toEqual(due[0]);
        });

        it('tells the plan of a late schedule which of its missed slots already hold a non-manual row', async () => {
          const late = await insert({ nextRunAt: at(MINUTE) });
          const punctual = await insert({ workflowName: late.workflowName, nextRunAt: at(9 * MINUTE + 30_000) });
          await store().insertOccurrences([
            occurrence(late, T0, { source: 'backfill' }),
            occurrence(late, at(MINUTE), { source: 'backfill' }),
            occurrence(late, at(3 * MINUTE), { source: 'backfill', status: 'abandoned' }),
            occurrence(late, at(4 * MINUTE), { id: newId(), source: 'manual' }),
            occurrence(late, at(9 * MINUTE), { source: 'backfill' }),
            occurrence(punctual, at(8 * MINUTE), { source: 'backfill' }),
          ]);
          const states = new Map<string, DueScheduleState>();
          await store().claimDueSchedules({
            now: at(10 * MINUTE),
            missedBefore: at(9 * MINUTE),
            workflowNames: [late.workflowName],
            limit: 10,
            plan: (schedule, state) => {
              states.set(schedule.id, state);
              return null;
            },
          });
          expect(states.get(late.id)).toEqual({
            hasActiveOccurrence: false,
            takenSlots: [at(MINUTE), at(3 * MINUTE)],
          });
          expect(states.get(punctual.id)).toEqual({ hasActiveOccurrence: false });
        });

        it('tells an overlap-skip plan whether an earlier occurrence is claimed or its pipeline unfinished', async () => {
          const row = await insert({ overlapPolicy: 'skip', nextRunAt: at(MINUTE) });
          const states: boolean[] = [];
          const claimDue = () =>
            claimScheduleAt(row, at(MINUTE), (_schedule, state) => {
              states.push(state.hasActiveOccurrence);
              return null;
            });
          await claimDue();
          const [earlier] = (await store().insertOccurrences([occurrence(row, T0)])).claimed;
          await claimDue();
          // As the runner hands off: the pipeline's idempotency key is the occurrence id.
          const pipeline = newPipeline(
            row.workflowName,
            { only: [] },
            { idempotencyKey: earlier!.id, scheduledTime: T0 },
          );
          await storage().executions.createPipeline(pipeline);
          await store().linkOccurrence(earlier!.id, pipeline.id, at(1));
          await claimDue();
          await storage().executions.pausePipeline(pipeline.id, null, at(2));
          await claimDue();
          await storage().executions.cancelPipeline(pipeline.id, at(3));
          await claimDue();
          expect(states).toEqual([false, true, true, true, false]);
        });

        it("cancels a cancel_other plan's replaced pipelines and their tasks with the claim, never without it", async () => {
          const row = await insert({ overlapPolicy: 'cancel_other', nextRunAt: at(MINUTE) });
          const [earlier] = (await store().insertOccurrences([occurrence(row, T0)])).claimed;
          const old = newPipeline(
            row.workflowName,
            { a: [], b: ['a'] },
            { idempotencyKey: earlier!.id, scheduledTime: T0 },
          );
          await storage().executions.createPipeline(old);
          await store().linkOccurrence(earlier!.id, old.id, at(1));
          const { plan: planSlot } = planOneSlot();
          const seen: Array<readonly string[] | undefined> = [];
          const claimDue = (prepareHandoff: () => never | null) =>
            claimScheduleAt(
              row,
              at(MINUTE),
              (schedule, state) => {
                seen.push(state.activePipelineIds);
                return { ...planSlot(schedule, state), cancelPipelineIds: state.activePipelineIds ?? [] };
              },
              prepareHandoff,
            );
          // A transaction that fails after the plan cancels nothing.
          const failure = await claimDue(() => {
            throw new ValidationError('handoff refused');
          }).catch((error: unknown) => error);
          expect(failure).toBeInstanceOf(ValidationError);
          expect(await storage().executions.getPipeline(old.id)).toMatchObject({ status: 'pending' });
          const [claimed] = await claimDue(() => null);
          expect(claimed).toMatchObject({ status: 'claimed', scheduledTime: at(MINUTE) });
          expect(seen).toEqual([[old.id], [old.id]]);
          expect(await storage().executions.getPipeline(old.id)).toMatchObject({
            status: 'cancelled',
            completedAt: at(MINUTE),
          });
          expect((await storage().executions.listTasks(old.id)).map((task) => task.status)).toEqual([
            'cancelled',
            'cancelled',
          ]);
        });

        it('cancels with a skipClaimed plan the pipeline a replaced row already has but has not linked', async () => {
          const row = await insert({ overlapPolicy: 'cancel_other', nextRunAt: at(MINUTE) });
          const [waiting] = (await store().insertOccurrences([occurrence(row, T0)])).claimed;
          const unlinked = newPipeline(
            row.workflowName,
            { only: [] },
            { idempotencyKey: waiting!.id, scheduledTime: T0 },
          );
          await storage().executions.createPipeline(unlinked);
          const { plan: planSlot } = planOneSlot();
          const rows = await claimScheduleAt(row, at(MINUTE), (schedule, state) => ({
            ...planSlot(schedule, state),
            skipClaimed: true,
          }));
          expect(rows.map((r) => [r.id, r.status])).toEqual([
            [occurrenceId(row.id, at(MINUTE)), 'claimed'],
            [waiting!.id, 'skipped'],
          ]);
          expect(await storage().executions.getPipeline(unlinked.id)).toMatchObject({ status: 'cancelled' });
        });

        it('creates and links the pipeline of each due occurrence in the claim transaction', async () => {
          const workflowName = uniqueName();
          const due = await insert({ workflowName, nextRunAt: at(0) });
          const jittered = await insert({ workflowName, nextRunAt: at(0) });
          const declined = await insert({ workflowName, nextRunAt: at(0) });
          const plan = (schedule: ScheduleRow): SchedulePlan => ({
            occurrences: [occurrence(schedule, at(0), { fireAt: schedule.id === jittered.id ? at(500) : at(0) })],
            nextRunAt: at(MINUTE),
            lastRunAt: at(0),
          });
          const prepared: string[] = [];
          const prepareHandoff = (row: CronExecutionRow) => {
            prepared.push(row.scheduleId);
            if (row.scheduleId === declined.id) return null;
            return newPipeline(row.workflowName, { a: [], b: ['a'] }, { idempotencyKey: row.id, now: at(10) });
          };
          const rows = await store().claimDueSchedules({
            now: at(10),
            workflowNames: [workflowName],
            limit: 10,
            plan,
            prepareHandoff,
          });
          expect(prepared.sort()).toEqual([due.id, declined.id].sort());
          const byScheduleId = new Map(rows.map((row) => [row.scheduleId, row]));
          const handedOff = byScheduleId.get(due.id)!;
          expect(handedOff).toMatchObject({ status: 'handed_off', handedOffAt: at(10) });
          expect(await store().getOccurrence(handedOff.id)).toEqual(handedOff);
          const pipeline = await storage().executions.getPipelineByIdempotencyKey(handedOff.id);
          expect(pipeline).toMatchObject({ id: handedOff.pipelineExecutionId, status: 'pending', workflowName });
          expect((await storage().executions.listTasks(pipeline!.id)).map((t) => t.status)).toEqual([
            'ready',
            'not_started',
          ]);
          for (const kept of [jittered, declined]) {
            expect(byScheduleId.get(kept.id)).toMatchObject({ status: 'claimed', pipelineExecutionId: null });
          }
        });

        it('links an occurrence to the pipeline that already holds its key, creating none', async () => {
          const row = await insert({ nextRunAt: at(0) });
          const slot = occurrence(row, at(0));
          const earlier = newPipeline(row.workflowName, { a: [] }, { idempotencyKey: slot.id });
          await storage().executions.createPipeline(earlier);
          const [linked] = await store().claimDueSchedules({
            now: at(10),
            workflowNames: [row.workflowName],
            limit: 10,
            plan: () => ({ occurrences: [slot], nextRunAt: at(MINUTE), lastRunAt: at(0) }),
            prepareHandoff: (r) => newPipeline(r.workflowName, { a: [] }, { idempotencyKey: r.id }),
          });
          expect(linked).toMatchObject({ status: 'handed_off', pipelineExecutionId: earlier.id });
          expect(await store().getOccurrence(slot.id)).toEqual(linked);
          expect(
            await storage().executions.listPipelines({ workflowName: row.workflowName, limit: 10, offset: 0 }),
          ).toHaveLength(1);
        });

        it('starts no pipeline for an occurrence whose slot already holds a ledger row, and returns none', async () => {
          const row = await insert({ nextRunAt: at(0) });
          const slot = occurrence(row, at(0));
          // Another row of the same slot (its own id): the occurrence key refuses the planned one.
          const taken = { ...slot, id: newId(), status: 'skipped' as const };
          await store().insertOccurrences([taken]);
          const rows = await store().claimDueSchedules({
            now: at(10),
            workflowNames: [row.workflowName],
            limit: 10,
            plan: () => ({ occurrences: [slot], nextRunAt: at(MINUTE), lastRunAt: at(0) }),
            prepareHandoff: (r) => newPipeline(r.workflowName, { a: [] }, { idempotencyKey: r.id }),
          });
          expect(rows).toEqual([]);
          expect(await storage().executions.getPipelineByIdempotencyKey(slot.id)).toBeNull();
          expect(
            await storage().executions.listPipelines({ workflowName: row.workflowName, limit: 10, offset: 0 }),
          ).toEqual([]);
          expect(await store().listOccurrences(row.id, 10, 0)).toEqual([storedOccurrence(taken)]);
          expect(await store().getSchedule(row.id)).toMatchObject({ nextRunAt: at(MINUTE) });
        });

        it('writes nothing, not even the claim, when preparing a handoff throws', async () => {
          const row = await insert({ nextRunAt: at(0) });
          const { plan } = planOneSlot();
          const failure = await store()
            .claimDueSchedules({
              now: at(10),
              workflowNames: [row.workflowName],
              limit: 10,
              plan,
              prepareHandoff: () => {
                throw new ValidationError('handoff refused');
              },
            })
            .catch((error: unknown) => error);
          expect(failure).toBeInstanceOf(ValidationError);
          expect(await store().getSchedule(row.id)).toEqual(row);
          expect(await store().listOccurrences(row.id, 10, 0)).toEqual([]);
        });

        it('writes nothing at all when a plan throws, and passes the error on', async () => {
          const workflowName = uniqueName();
          const rows = [
            await insert({ workflowName, nextRunAt: at(0) }),
            await insert({ workflowName, nextRunAt: at(1) }),
          ];
          const { plan: planSlot } = planOneSlot();
          let planned = 0;
          const plan = (schedule: ScheduleRow, state: DueScheduleState) => {
            planned += 1;
            if (planned === 2) throw new ValidationError('plan refused');
            return planSlot(schedule, state);
          };
          const failure = await store()
            .claimDueSchedules({ now: at(10), workflowNames: [workflowName], limit: 10, plan })
            .catch((error: unknown) => error);
          expect(failure).toBeInstanceOf(ValidationError);
          expect((failure as Error).message).toBe('plan refused');
          for (const row of rows) {
            expect(await store().getSchedule(row.id)).toEqual(row);
            expect(await store().listOccurrences(row.id, 10, 0)).toEqual([]);
          }
        });
      });
      describe('insertManualOccurrence', () => {
        /** A manual row of `schedule` claimed at `now`, with a random id as the trigger writes it. */
        const manual = (schedule: ScheduleRow, now: Date) =>
          occurrence(schedule, now, { id: newId(), source: 'manual', claimedAt: now });
        /** A pipeline started for `row` and linked to it, as a handoff leaves them. */
        const handedOff = async (row: CronExecutionRow) => {
          const pipeline = newPipeline(
            row.workflowName,
            { a: [], b: ['a'] },
            { idempotencyKey: row.id, scheduledTime: row.scheduledTime },
          );
          await storage().executions.createPipeline(pipeline);
          await store().linkOccurrence(row.id, pipeline.id, at(1));
          return pipeline;
        };

        it('writes the row with the status its plan gives, telling the plan what is active', async () => {
          const row = await insert({ overlapPolicy: 'skip' });
          const states: DueScheduleState[] = [];
          const trigger = (written: NewCronExecution, status: 'claimed' | 'skipped') =>
            store().insertManualOccurrence({
              row: written,
              plan: (schedule, state) => {
                expect(schedule).toEqual(row);
                states.push(state);
                return { status };
              },
            });
          const firstRow = manual(row, at(0));
          const first = await trigger(firstRow, 'claimed');
          expect(first).toEqual({ row: storedOccurrence(firstRow), state: { hasActiveOccurrence: false } });
          expect(states).toEqual([{ hasActiveOccurrence: false }]);
          const pipeline = await handedOff(first!.row);
          const second = await trigger(manual(row, at(2)), 'skipped');
          expect(second!.state).toEqual({ hasActiveOccurrence: true, activePipelineIds: [pipeline.id] });
          expect(await store().getOccurrence(second!.row.id)).toMatchObject({ status: 'skipped', source: 'manual' });
          await storage().executions.cancelPipeline(pipeline.id, at(3));
          expect((await trigger(manual(row, at(4)), 'claimed'))!.state).toEqual({ hasActiveOccurrence: false });
        });

        it('sees a claimed or buffered occurrence as active, and skips the buffered ones when asked', async () => {
          const row = await insert({ overlapPolicy: 'buffer_one' });
          const [buffered] = (await store().insertOccurrences([occurrence(row, T0, { status: 'buffered' })])).claimed;
          expect(buffered).toBeUndefined();
          const result = await store().insertManualOccurrence({
            row: manual(row, at(5)),
            plan: (_schedule, state) => {
              expect(state).toEqual({ hasActiveOccurrence: true, activePipelineIds: [] });
              return { status: 'buffered', skipBuffered: true };
            },
          });
          expect(result!.row.status).toBe('buffered');
          expect(await store().getOccurrence(occurrence(row, T0).id)).toMatchObject({ status: 'skipped' });
          expect(await store().getOccurrence(result!.row.id)).toMatchObject({ status: 'buffered' });
        });

        it('cancels the pipelines and skips the claimed scheduler rows a cancel_other trigger replaces', async () => {
          const row = await insert({ overlapPolicy: 'cancel_other' });
          const [running] = (await store().insertOccurrences([occurrence(row, T0)])).claimed;
          const pipeline = await handedOff(running!);
          const [waiting] = (await store().insertOccurrences([occurrence(row, at(MINUTE))])).claimed;
          // Its runner created its pipeline and has not linked it yet (or died before).
          const unlinked = newPipeline(row.workflowName, { only: [] }, { idempotencyKey: waiting!.id });
          await storage().executions.createPipeline(unlinked);
          const result = await store().insertManualOccurrence({
            row: manual(row, at(MINUTE + 1)),
            plan: (_schedule, state) => ({
              status: 'claimed',
              skipClaimed: true,
              cancelPipelineIds: state.activePipelineIds!,
            }),
          });
          expect(result!.row).toMatchObject({ status: 'claimed', source: 'manual' });
          expect(await storage().executions.getPipeline(pipeline.id)).toMatchObject({ status: 'cancelled' });
          expect((await storage().executions.listTasks(pipeline.id)).map((task) => task.status)).toEqual([
            'cancelled',
            'cancelled',
          ]);
          expect(await store().getOccurrence(waiting!.id)).toMatchObject({ status: 'skipped' });
          expect(await storage().executions.getPipeline(unlinked.id)).toMatchObject({ status: 'cancelled' });
        });

        it('returns null and writes nothing for an unknown schedule', async () => {
          const ghost = scheduleRow({ workflowName: uniqueName() });
          const row = manual(ghost, at(0));
          const result = await store().insertManualOccurrence({
            row,
            plan: () => {
              throw new Error('no plan for an unknown schedule');
            },
          });
          expect(result).toBeNull();
          expect(await store().getOccurrence(row.id)).toBeNull();
        });

        it('lets one of several concurrent triggers start and shows it to the others as active', async () => {
          const workflowName = uniqueName();
          const rows = [];
          for (let i = 0; i < 8; i += 1) rows.push(await insert({ workflowName, overlapPolicy: 'skip' }));
          const trigger = (row: ScheduleRow) =>
            store().insertManualOccurrence({
              row: manual(row, at(0)),
              plan: (_schedule, state) => ({ status: state.hasActiveOccurrence ? 'skipped' : 'claimed' }),
            });
          const results = await Promise.all(rows.flatMap((row) => [trigger(row), trigger(row), trigger(row)]));
          for (const row of rows) {
            const statuses = results.filter((result) => result!.row.scheduleId === row.id).map((r) => r!.row.status);
            expect(statuses.sort()).toEqual(['claimed', 'skipped', 'skipped']);
          }
        });
      });
    });

    describe('whole tables', () => {
      const storage = useStorage(open, 'each');
      const store = () => storage().cron;

      it('probes whether any occurrence waits buffered, of any workflow, until it is released', async () => {
        const probe = () => store().probeTick({ workflowNames: ['unrelated'], until: at(0) });
        expect(await probe()).toEqual({ earliestRunAt: null, anyBuffered: false });
        const { schedule } = await store().insertSchedule(scheduleRow({ overlapPolicy: 'buffer_one' }));
        await store().insertOccurrences([occurrence(schedule, at(0), { status: 'buffered' })]);
        expect(await probe()).toEqual({ earliestRunAt: null, anyBuffered: true });
        const request = { now: at(MINUTE), workflowNames: [schedule.workflowName], runnerId: 'r1', limit: 10 };
        expect((await store().releaseBuffered(request)).map((row) => row.status)).toEqual(['claimed']);
        expect(await probe()).toEqual({ earliestRunAt: null, anyBuffered: false });
      });

      it('lists schedules oldest first, filtered by enabled and workflow, a page at a time', async () => {
        const rows = [
          scheduleRow({ workflowName: 'a', enabled: true, createdAt: at(3) }),
          scheduleRow({ workflowName: 'b', enabled: false, createdAt: at(1) }),
          scheduleRow({ workflowName: 'a', enabled: false, createdAt: at(2) }),
          scheduleRow({ workflowName: 'b', enabled: true, createdAt: at(4) }),
        ];
        for (const row of rows) await store().insertSchedule(row);
        const [a1, b1, a2, b2] = rows as [ScheduleRow, ScheduleRow, ScheduleRow, ScheduleRow];
        const list = (filter: object) => store().listSchedules({ limit: 10, offset: 0, ...filter });
        expect(await list({})).toEqual([b1, a2, a1, b2]);
        expect(await list({ enabledOnly: false })).toEqual([b1, a2, a1, b2]);
        expect(await list({ enabledOnly: true })).toEqual([a1, b2]);
        expect(await list({ workflowName: 'a' })).toEqual([a2, a1]);
        expect(await list({ workflowName: 'a', enabledOnly: true })).toEqual([a1]);
        expect(await list({ limit: 2, offset: 1 })).toEqual([a2, a1]);
        expect(await list({ workflowName: 'c' })).toEqual([]);
      });
    });
  });
}

function byId(left: { id: string }, right: { id: string }): number {
  return left.id < right.id ? -1 : left.id > right.id ? 1 : 0;
}
