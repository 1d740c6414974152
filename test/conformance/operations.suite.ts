import { type DueScheduleState, MAX_RUNS_NOTE, newId, type SchedulePlan, type ScheduleRow } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import {
  at,
  CHAIN,
  completed,
  DIAMOND,
  newPipeline,
  type OpenStorage,
  occurrence,
  SINGLE,
  scheduleRow,
  storedOccurrence,
  uniqueName,
  useStorage,
  workflowFixture,
} from './fixtures.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/**
 * Storage behind the operator features: retrying a failed pipeline, delayed starts, tracing a
 * pipeline to its schedule, overlap buffering, maxRuns and the schedule's note and dst.
 */
export function describeOperations(open: OpenStorage): void {
  describe('operations', () => {
    const storage = useStorage(open, 'each');

    describe('retryPipeline', () => {
      it('runs a failed pipeline again from the given tasks, keeping attempts and completed outputs', async () => {
        const wf = workflowFixture(storage, DIAMOND);
        const pipeline = await wf.create();
        const [a, b] = await wf.claim('r', at(1));
        await wf.finish(a!, completed({ a: 1 }), at(2));
        await wf.finish(b!, { status: 'failed', error: 'boom' }, at(3));
        // The runner judges c's trigger once both its parents are terminal: skipped, so the pipeline ends failed.
        const [c] = await wf.claim('r', at(4));
        const failed = await wf.finish(c!, { status: 'skipped', reason: 'upstream failed' }, at(5));
        expect(failed.finishedPipeline).toMatchObject({ status: 'failed', failedTasks: 1 });
        const tasks = await storage().executions.listTasks(pipeline.id);
        const byId = Object.fromEntries(tasks.map((task) => [task.taskId, task]));
        expect(byId.c!.status).toBe('skipped');

        const retried = await storage().executions.retryPipeline(
          pipeline.id,
          [
            { id: byId.b!.id, pendingDeps: 0 },
            { id: byId.c!.id, pendingDeps: 1 },
          ],
          at(10),
        );
        expect(retried).toMatchObject({
          id: pipeline.id,
          status: 'running',
          remainingTasks: 2,
          failedTasks: 0,
          error: null,
          completedAt: null,
        });
        const after = Object.fromEntries(
          (await storage().executions.listTasks(pipeline.id)).map((task) => [task.taskId, task]),
        );
        expect(after.a).toMatchObject({ status: 'completed', output: { set: { a: 1 }, deleted: [] } });
        expect(after.b).toMatchObject({
          status: 'ready',
          attempt: 1,
          failedAttempts: 1,
          pendingDeps: 0,
          leaseOwner: null,
        });
        expect(after.c).toMatchObject({ status: 'not_started', pendingDeps: 1, completedAt: null });

        // It runs to completion from there: b is claimable (attempt 2), then c.
        const [again] = await wf.claim('r', at(11));
        expect(again).toMatchObject({ task: { taskId: 'b', attempt: 2 } });
        await wf.finish(again!, completed({ b: 2 }), at(12));
        const [last] = await wf.claim('r', at(13));
        const done = await wf.finish(last!, completed(), at(14));
        expect(done.finishedPipeline).toMatchObject({ id: pipeline.id, status: 'completed', failedTasks: 0 });
      });

      it('changes nothing and returns the row as it is for a pipeline that is not failed or cancelled', async () => {
        const wf = workflowFixture(storage, CHAIN);
        const pipeline = await wf.create();
        const tasks = await storage().executions.listTasks(pipeline.id);
        const result = await storage().executions.retryPipeline(
          pipeline.id,
          [{ id: tasks[0]!.id, pendingDeps: 0 }],
          at(5),
        );
        expect(result).toEqual(pipeline);
        expect(await storage().executions.listTasks(pipeline.id)).toEqual(tasks);
        expect(await storage().executions.retryPipeline('00000000-0000-4000-8000-000000000000', [], at(5))).toBeNull();
      });

      it('retries a cancelled pipeline', async () => {
        const wf = workflowFixture(storage, CHAIN);
        const pipeline = await wf.create();
        await storage().executions.cancelPipeline(pipeline.id, at(1));
        const tasks = await storage().executions.listTasks(pipeline.id);
        const retried = await storage().executions.retryPipeline(
          pipeline.id,
          tasks.map((task, index) => ({ id: task.id, pendingDeps: index })),
          at(2),
        );
        expect(retried).toMatchObject({ status: 'running', remainingTasks: 2 });
        expect((await wf.claim('r', at(3))).map((claimed) => claimed.task.taskId)).toEqual(['a']);
      });
    });

    describe('delayed start and schedule link', () => {
      it('keeps every task of a pipeline with runAt unclaimable, and the pipeline pending, until then', async () => {
        const wf = workflowFixture(storage, CHAIN);
        const pipeline = await wf.create({ runAt: at(MINUTE) });
        expect(await wf.claim('r', at(MINUTE - 1))).toEqual([]);
        expect((await storage().executions.getPipeline(pipeline.id))!.status).toBe('pending');
        const [first] = await wf.claim('r', at(MINUTE));
        expect(first).toMatchObject({ task: { taskId: 'a' }, pipeline: { status: 'running' } });
      });

      it('stores the schedule id of a pipeline and lists by it', async () => {
        const name = uniqueName();
        const scheduleId = '6f1f5a8e-1111-4a5b-9e8f-2d7c6b5a4e3f';
        const scheduled = newPipeline(name, CHAIN, { scheduleId, scheduledTime: at(0) });
        await storage().executions.createPipelines([scheduled, newPipeline(name, CHAIN)]);
        expect((await storage().executions.getPipeline(scheduled.id))!.scheduleId).toBe(scheduleId);
        const listed = await storage().executions.listPipelines({ scheduleId, limit: 10, offset: 0 });
        expect(listed.map((row) => row.id)).toEqual([scheduled.id]);
      });
    });

    describe('health and gauges', () => {
      it('counts ready tasks that are due and running pipelines', async () => {
        const wf = workflowFixture(storage, CHAIN);
        await wf.create();
        await wf.create({ runAt: at(MINUTE) });
        expect(await storage().executions.countWork(at(0))).toEqual({ readyTasks: 1, runningPipelines: 0 });
        await wf.claim('r', at(1), { limit: 1 });
        expect(await storage().executions.countWork(at(MINUTE))).toEqual({ readyTasks: 1, runningPipelines: 1 });
      });

      it('lists due enabled schedules whose workflow no live runner has, and counts abandoned rows', async () => {
        const stranded = scheduleRow({ workflowName: uniqueName(), nextRunAt: at(0) });
        const runnable = scheduleRow({ workflowName: uniqueName(), nextRunAt: at(0) });
        const later = scheduleRow({ workflowName: stranded.workflowName, nextRunAt: at(2 * MINUTE) });
        const disabled = scheduleRow({ workflowName: stranded.workflowName, enabled: false, nextRunAt: null });
        for (const row of [stranded, runnable, later, disabled]) await storage().cron.insertSchedule(row);
        const found = await storage().cron.listStrandedSchedules(at(MINUTE), [runnable.workflowName], 10);
        expect(found.map((row) => row.id)).toEqual([stranded.id]);
        expect((await storage().cron.listStrandedSchedules(at(MINUTE), [], 10)).map((row) => row.id).sort()).toEqual(
          [stranded.id, runnable.id].sort(),
        );
        expect(await storage().cron.countAbandonedOccurrences()).toBe(0);
        await storage().cron.insertOccurrences([occurrence(stranded, at(0), { status: 'abandoned' })]);
        expect(await storage().cron.countAbandonedOccurrences()).toBe(1);
      });
    });

    describe('schedules', () => {
      it('round-trips pauseOnFailure, maxRuns, runCount, dst and note', async () => {
        const row = scheduleRow({
          name: uniqueName('s'),
          pauseOnFailure: true,
          maxRuns: 3,
          runCount: 1,
          dst: { repeated: 'both', gap: 'skip' },
          note: 'owned by data-eng',
        });
        await storage().cron.insertSchedule(row);
        expect(await storage().cron.getSchedule(row.id)).toEqual(row);
        const updated = await storage().cron.updateSchedule(row.id, 1, { note: null, dst: null });
        expect(updated).toMatchObject({ note: null, dst: null, version: 2 });
      });

      /** Claims the due schedule with `plan`, recording the state it was planned with. */
      const claimWith = async (schedule: ScheduleRow, plan: (s: ScheduleRow) => SchedulePlan, now = at(0)) => {
        const states: DueScheduleState[] = [];
        const rows = await storage().cron.claimDueSchedules({
          now,
          workflowNames: [schedule.workflowName],
          limit: 10,
          plan: (s, state) => {
            states.push(state);
            return plan(s);
          },
        });
        return { rows, state: states[0] };
      };

      it('counts a buffered row as active, skips stored buffered rows on request, and stores runCount and the maxRuns note', async () => {
        const schedule = scheduleRow({ workflowName: uniqueName(), overlapPolicy: 'buffer_one', maxRuns: 5 });
        await storage().cron.insertSchedule(schedule);
        const first = await claimWith(schedule, (s) => ({
          occurrences: [occurrence(s, at(0), { status: 'buffered' })],
          nextRunAt: at(MINUTE),
          lastRunAt: at(0),
        }));
        expect(first.rows).toEqual([]);
        const second = await claimWith(
          schedule,
          (s) => ({
            occurrences: [occurrence(s, at(MINUTE), { status: 'buffered' })],
            nextRunAt: null,
            lastRunAt: at(MINUTE),
            runCount: 5,
            disableNote: MAX_RUNS_NOTE,
            skipBuffered: true,
          }),
          at(MINUTE),
        );
        expect(second.state).toMatchObject({ hasActiveOccurrence: true });
        const ledger = await storage().cron.listOccurrences(schedule.id, 10, 0);
        expect(ledger.map((row) => [row.scheduledTime, row.status])).toEqual([
          [at(MINUTE), 'buffered'],
          [at(0), 'skipped'],
        ]);
        expect(await storage().cron.getSchedule(schedule.id)).toMatchObject({
          enabled: false,
          runCount: 5,
          note: MAX_RUNS_NOTE,
          nextRunAt: null,
        });
      });

      it('tells a cancel_other plan which pipelines are active', async () => {
        const wf = workflowFixture(storage, CHAIN);
        const schedule = scheduleRow({ workflowName: wf.name, overlapPolicy: 'cancel_other' });
        await storage().cron.insertSchedule(schedule);
        const [row] = (await storage().cron.insertOccurrences([occurrence(schedule, at(-MINUTE))])).claimed;
        const pipeline = await wf.create({ idempotencyKey: row!.id, scheduledTime: at(-MINUTE) });
        await storage().cron.linkOccurrence(row!.id, pipeline.id, at(-MINUTE));
        const { state } = await claimWith(schedule, (s) => ({
          occurrences: [occurrence(s, at(0))],
          nextRunAt: at(MINUTE),
          lastRunAt: at(0),
        }));
        expect(state).toMatchObject({ hasActiveOccurrence: true, activePipelineIds: [pipeline.id] });
      });

      it('reads the newest pipeline of a pauseOnFailure schedule for its plan, which may pause it', async () => {
        const wf = workflowFixture(storage, SINGLE);
        const schedule = scheduleRow({ workflowName: wf.name, pauseOnFailure: true, enabledAt: at(-10 * MINUTE) });
        const unwatched = scheduleRow({ workflowName: wf.name });
        for (const row of [schedule, unwatched]) await storage().cron.insertSchedule(row);
        // Plans that change nothing leave both schedules due, so each claim below sees them again.
        const stay = (s: ScheduleRow): SchedulePlan => ({ occurrences: [], nextRunAt: s.nextRunAt, lastRunAt: null });
        const statesOf = async (plan: (s: ScheduleRow) => SchedulePlan = stay) => {
          const states = new Map<string, DueScheduleState>();
          await storage().cron.claimDueSchedules({
            now: at(0),
            workflowNames: [wf.name],
            limit: 10,
            plan: (s, state) => {
              states.set(s.id, state);
              return plan(s);
            },
          });
          return states;
        };
        let states = await statesOf();
        expect(states.get(schedule.id)!.latestPipeline).toBeNull();
        expect(states.get(unwatched.id)).not.toHaveProperty('latestPipeline');

        const scheduled = { scheduleId: schedule.id, scheduledTime: at(-3 * MINUTE) };
        const older = await wf.create({ ...scheduled, now: at(-3 * MINUTE) });
        await wf.runAll(at(-2 * MINUTE), { status: 'failed', error: 'boom' });
        const newer = await wf.create({ ...scheduled, scheduledTime: at(-MINUTE), now: at(-MINUTE) });
        await wf.create({ now: at(-MINUTE / 2) }); // not the schedule's
        states = await statesOf();
        expect(states.get(schedule.id)!.latestPipeline).toEqual({ id: newer.id, status: 'pending', completedAt: null });
        expect(older.id).not.toBe(newer.id);

        await wf.runAll(at(-MINUTE / 4), { status: 'failed', error: 'boom' });
        const note = `paused after failure of execution ${newer.id}`;
        states = await statesOf((s) => ({
          ...stay(s),
          ...(s.id === schedule.id && { nextRunAt: null, disableNote: note }),
        }));
        expect(states.get(schedule.id)!.latestPipeline).toEqual({
          id: newer.id,
          status: 'failed',
          completedAt: at(-MINUTE / 4),
        });
        expect(await storage().cron.getSchedule(schedule.id)).toMatchObject({ enabled: false, nextRunAt: null, note });
        expect(await storage().cron.getSchedule(unwatched.id)).toMatchObject({ enabled: true, note: null });
      });

      it('turns the earlier claimed scheduler rows of a cancel_other schedule skipped on request, for good', async () => {
        const wf = workflowFixture(storage, CHAIN);
        const schedule = scheduleRow({ workflowName: wf.name, overlapPolicy: 'cancel_other' });
        const other = scheduleRow({ workflowName: wf.name, overlapPolicy: 'cancel_other', nextRunAt: at(MINUTE) });
        for (const row of [schedule, other]) await storage().cron.insertSchedule(row);
        const jittered = occurrence(schedule, at(-2 * MINUTE), { fireAt: at(-MINUTE) });
        const manual = occurrence(schedule, at(-90_000), { id: newId(), source: 'manual' });
        const elsewhere = occurrence(other, at(-2 * MINUTE));
        await storage().cron.insertOccurrences([jittered, manual, elsewhere]);
        const newest = occurrence(schedule, at(0));
        const { rows, state } = await claimWith(schedule, (s) => ({
          occurrences: [occurrence(s, at(0))],
          nextRunAt: at(MINUTE),
          lastRunAt: at(0),
          skipClaimed: true,
        }));
        expect(state).toMatchObject({ hasActiveOccurrence: true });
        // The new row to hand off, and the row it replaced, to report.
        expect(rows).toHaveLength(2);
        expect(rows).toEqual(
          expect.arrayContaining([storedOccurrence(newest), { ...storedOccurrence(jittered), status: 'skipped' }]),
        );
        // A runner that still holds the replaced row cannot link it, and recovery never picks it up.
        expect(await storage().cron.linkOccurrence(jittered.id, newId(), at(1))).toBe(false);
        const lost = await storage().cron.claimLostOccurrences({
          now: at(10 * MINUTE),
          lostBefore: at(5 * MINUTE),
          workflowNames: [wf.name],
          limit: 10,
          runnerId: 'r2',
          leaseMs: MINUTE,
        });
        expect(lost.map(({ row }) => row.id).sort()).toEqual([newest.id, manual.id, elsewhere.id].sort());
        expect((await storage().cron.getOccurrence(jittered.id))!.status).toBe('skipped');
      });

      it('skips the buffered rows of a deleted schedule, and only those, in the same call', async () => {
        const wf = workflowFixture(storage, CHAIN);
        const doomed = scheduleRow({ workflowName: wf.name, overlapPolicy: 'buffer_all' });
        const kept = scheduleRow({ workflowName: wf.name, overlapPolicy: 'buffer_all' });
        for (const row of [doomed, kept]) await storage().cron.insertSchedule(row);
        await storage().cron.insertOccurrences([
          occurrence(doomed, at(0)),
          occurrence(doomed, at(MINUTE), { status: 'buffered' }),
          occurrence(doomed, at(2 * MINUTE), { status: 'buffered' }),
          occurrence(kept, at(MINUTE), { status: 'buffered' }),
        ]);
        expect(await storage().cron.deleteSchedule(doomed.id)).toBe(true);
        expect(await storage().cron.getSchedule(doomed.id)).toBeNull();
        const statuses = async (id: string) =>
          (await storage().cron.listOccurrences(id, 10, 0)).map((row) => [row.scheduledTime, row.status]);
        // The claimed row is recovery's (it abandons it: the schedule is gone).
        expect(await statuses(doomed.id)).toEqual([
          [at(2 * MINUTE), 'skipped'],
          [at(MINUTE), 'skipped'],
          [at(0), 'claimed'],
        ]);
        expect(await statuses(kept.id)).toEqual([[at(MINUTE), 'buffered']]);
        expect(await storage().cron.deleteSchedule(doomed.id)).toBe(false);
        // Terminal now: retention may delete them.
        expect(await storage().cron.deleteTerminalOccurrences(at(DAY), 100)).toBe(2);
      });

      it('skips the buffered rows of a paused schedule instead of releasing them', async () => {
        const wf = workflowFixture(storage, CHAIN);
        const schedule = scheduleRow({ workflowName: wf.name, overlapPolicy: 'buffer_one', enabled: false });
        await storage().cron.insertSchedule(schedule);
        await storage().cron.insertOccurrences([occurrence(schedule, at(0), { status: 'buffered' })]);
        const request = { now: at(MINUTE), workflowNames: [wf.name], runnerId: 'r2', limit: 10 };
        expect(await storage().cron.releaseBuffered(request)).toEqual([]);
        const ledger = await storage().cron.listOccurrences(schedule.id, 10, 0);
        expect(ledger.map((stored) => stored.status)).toEqual(['skipped']);
      });

      it('releases a buffered manual trigger without counting it in runCount', async () => {
        const wf = workflowFixture(storage, CHAIN);
        const schedule = scheduleRow({ workflowName: wf.name, overlapPolicy: 'buffer_one', maxRuns: 1, runCount: 0 });
        await storage().cron.insertSchedule(schedule);
        const manual = occurrence(schedule, at(0), { id: newId(), source: 'manual', status: 'buffered' });
        await storage().cron.insertOccurrences([manual]);
        const request = { now: at(MINUTE), workflowNames: [wf.name], runnerId: 'r2', limit: 10 };
        expect(await storage().cron.releaseBuffered(request)).toEqual([
          expect.objectContaining({ id: manual.id, source: 'manual', status: 'claimed' }),
        ]);
        // maxRuns counts the scheduler's occurrences: the schedule is neither counted nor disabled.
        expect(await storage().cron.getSchedule(schedule.id)).toMatchObject({ runCount: 0, enabled: true });
      });

      it('releases the oldest buffered row once nothing is active, and counts it in runCount', async () => {
        const wf = workflowFixture(storage, CHAIN);
        const schedule = scheduleRow({ workflowName: wf.name, overlapPolicy: 'buffer_all', maxRuns: 2, runCount: 1 });
        await storage().cron.insertSchedule(schedule);
        const [active] = (await storage().cron.insertOccurrences([occurrence(schedule, at(0))])).claimed;
        await storage().cron.insertOccurrences([
          occurrence(schedule, at(MINUTE), { status: 'buffered' }),
          occurrence(schedule, at(2 * MINUTE), { status: 'buffered' }),
        ]);
        const request = { now: at(3 * MINUTE), workflowNames: [wf.name], runnerId: 'r2', limit: 10 };
        expect(await storage().cron.releaseBuffered(request)).toEqual([]); // the claimed row is active
        const pipeline = await wf.create({ idempotencyKey: active!.id, scheduledTime: at(0) });
        await storage().cron.linkOccurrence(active!.id, pipeline.id, at(1));
        expect(await storage().cron.releaseBuffered(request)).toEqual([]); // its pipeline is pending
        await wf.runAll(at(2));
        const released = await storage().cron.releaseBuffered(request);
        expect(released).toEqual([
          expect.objectContaining({
            scheduledTime: at(MINUTE),
            status: 'claimed',
            claimedBy: 'r2',
            claimedAt: at(3 * MINUTE),
            fireAt: at(3 * MINUTE),
          }),
        ]);
        // That hand-off reached maxRuns: the schedule is disabled and the last buffered row never runs.
        expect(await storage().cron.getSchedule(schedule.id)).toMatchObject({
          runCount: 2,
          enabled: false,
          note: MAX_RUNS_NOTE,
        });
        await storage().cron.linkOccurrence(released[0]!.id, (await wf.create()).id, at(3 * MINUTE));
        await wf.runAll(at(4 * MINUTE));
        expect(await storage().cron.releaseBuffered({ ...request, now: at(5 * MINUTE) })).toEqual([]);
        const ledger = await storage().cron.listOccurrences(schedule.id, 10, 0);
        expect(ledger.map((row) => row.status)).toEqual(['skipped', 'handed_off', 'handed_off']);
      });
    });
  });
}
