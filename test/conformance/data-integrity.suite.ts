import { DatabaseError, type JsonObject, newId, occurrenceId } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import {
  at,
  newPipeline,
  type OpenStorage,
  occurrence,
  SINGLE,
  scheduleRow,
  storedOccurrence,
  T0,
  uniqueName,
  useStorage,
  workflowFixture,
} from './fixtures.js';

/** JSON that exercises escaping, nesting, unicode and number forms; every adapter must return it unchanged. */
const AWKWARD_JSON: JsonObject = {
  text: 'héllo wörld — ✓ 日本語 עברית Ελληνικά',
  emoji: '🚀 👩‍👩‍👧‍👦 🇪🇺',
  escapes: 'quote " apostrophe \' backslash \\ slash / newline \n tab \t',
  sqlish: "'); DROP TABLE cron_schedules; --",
  nested: { deep: { deeper: [1, 'two', { three: 3 }, [4, [5, []]]] }, empty: {} },
  emptyList: [],
  nothing: null,
  flags: [true, false],
  numbers: [0, -1, 1.5, -0.25, 1e-7, 1e21, 0.1 + 0.2, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER],
  'key with spaces': 'value',
  ключ: 'значение',
  '': 'empty key',
};

/** Instants at the edges: the epoch, before it, past 2038, far future, and every millisecond digit. */
const INSTANTS = [
  new Date('1970-01-01T00:00:00.000Z'),
  new Date('1969-12-31T23:59:59.999Z'),
  new Date('2038-01-19T03:14:08.001Z'),
  new Date('2999-12-31T23:59:59.999Z'),
  new Date('2026-03-08T07:00:00.123Z'),
  new Date('2026-10-25T01:59:59.990Z'),
];

/**
 * Whatever goes in comes out: every column type round-trips, constraints hold, cascades
 * run, and a unit of work that fails leaves nothing behind.
 */
export function describeDataIntegrity(open: OpenStorage): void {
  describe('data integrity', () => {
    const storage = useStorage(open, 'all');

    describe('column round trips', () => {
      it('reads ids back as the canonical lower-case strings they were written as', async () => {
        const ids = ['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', newId()];
        const scheduleId = occurrenceId(newId(), T0);
        const pipeline = newPipeline(uniqueName(), { first: [], second: [], third: [] }, { id: ids[0]! });
        pipeline.tasks.forEach((task, i) => {
          task.id = ids[(i + 1) % ids.length]!;
        });
        await storage().executions.createPipeline(pipeline);
        expect((await storage().executions.getPipeline(ids[0]!))!.id).toBe(ids[0]);
        expect(
          (await storage().executions.listTasks(ids[0]!)).map((task) => [task.id, task.pipelineExecutionId]),
        ).toEqual([
          [ids[1], ids[0]],
          [ids[2], ids[0]],
          [ids[0], ids[0]],
        ]);
        const schedule = scheduleRow({ id: scheduleId, workflowName: uniqueName() });
        await storage().cron.insertSchedule(schedule);
        expect((await storage().cron.getSchedule(scheduleId))!.id).toBe(scheduleId);
        const row = occurrence(schedule, T0);
        await storage().cron.insertOccurrences([row]);
        await storage().cron.linkOccurrence(row.id, ids[1]!, at(1));
        expect(await storage().cron.getOccurrence(row.id)).toMatchObject({
          id: row.id,
          scheduleId,
          pipelineExecutionId: ids[1],
        });
      });

      it('keeps instants to the millisecond, at the edges of the range', async () => {
        for (const instant of INSTANTS) {
          const schedule = scheduleRow({
            workflowName: uniqueName(),
            startAt: instant,
            endAt: instant,
            nextRunAt: instant,
            lastRunAt: instant,
            createdAt: instant,
            updatedAt: instant,
          });
          await storage().cron.insertSchedule(schedule);
          expect(await storage().cron.getSchedule(schedule.id)).toEqual(schedule);
          const row = occurrence(schedule, instant, { fireAt: instant, claimedAt: instant });
          await storage().cron.insertOccurrences([row]);
          expect(await storage().cron.getOccurrence(row.id)).toEqual(storedOccurrence(row));
        }
      });

      it('writes a Date built from a fractional millisecond count as its whole milliseconds', async () => {
        const fractional = new Date(T0.getTime() + 0.999);
        const pipeline = await workflowFixture(storage, SINGLE).create({ now: fractional, scheduledTime: fractional });
        const read = await storage().executions.getPipeline(pipeline.id);
        expect(read).toMatchObject({ createdAt: T0, scheduledTime: T0, updatedAt: T0 });
        expect(read!.createdAt.getTime()).toBe(T0.getTime());
      });

      it('returns JSON unchanged: nesting, unicode, escapes and numbers, in every JSON column', async () => {
        const wf = workflowFixture(storage, SINGLE);
        const pipeline = await wf.create({ input: AWKWARD_JSON });
        expect((await storage().executions.getPipeline(pipeline.id))!.input).toEqual(AWKWARD_JSON);
        const [claimed] = await wf.claim('r1', at(1));
        expect(claimed!.pipeline.input).toEqual(AWKWARD_JSON);
        const output = { set: AWKWARD_JSON, deleted: ['gone', 'ключ', ''] };
        await wf.finish(claimed!, { status: 'completed', output }, at(2));
        expect((await storage().executions.listTasks(pipeline.id))[0]!.output).toEqual(output);

        const schedule = scheduleRow({ workflowName: uniqueName(), name: `☀️ ${uniqueName()}`, context: AWKWARD_JSON });
        await storage().cron.insertSchedule(schedule);
        expect(await storage().cron.getScheduleByName(schedule.name!)).toEqual(schedule);
        const row = occurrence(schedule, T0);
        await storage().cron.insertOccurrences([row]);
        expect((await storage().cron.getOccurrence(row.id))!.context).toEqual(AWKWARD_JSON);
      });

      it('returns JSON strings holding NUL, other control characters and lone surrogates unchanged', async () => {
        const input = { nul: 'a\u0000b', controls: '\u0001\u001f\u007f', lone: 'x\ud800y' };
        const pipeline = await workflowFixture(storage, SINGLE).create({ input });
        expect((await storage().executions.getPipeline(pipeline.id))!.input).toEqual(input);
      });

      it('claims a task and its pipeline exactly as a read returns them: every column, JSON no store can hold as is, instants at the edges', async () => {
        // The claim returns its rows in a form of its own (Postgres: one JSON row): it must decode to what the reads do.
        const wf = workflowFixture(storage, SINGLE);
        const input = { ...AWKWARD_JSON, nul: 'a\u0000b', lone: 'x\ud800y' };
        for (const scheduledTime of [
          ...INSTANTS,
          new Date('0001-01-01T00:00:00.000Z'),
          new Date('9999-12-31T23:59:59.999Z'),
        ]) {
          const pipeline = await wf.create({ input, scheduledTime, idempotencyKey: uniqueName() });
          const [claimed] = await wf.claim('r1', at(1));
          expect(claimed!.pipeline).toEqual(await storage().executions.getPipeline(pipeline.id));
          expect([claimed!.task]).toEqual(await storage().executions.listTasks(pipeline.id));
          expect(claimed!.pipeline.input).toEqual(input);
          expect(claimed!.pipeline.scheduledTime).toEqual(scheduledTime);
          await wf.finish(claimed!, { status: 'completed', output: { set: {}, deleted: [] } }, at(2));
        }
      });

      it('returns booleans and nulls as written', async () => {
        const bare = scheduleRow({ workflowName: uniqueName(), enabled: false, name: null, nextRunAt: null });
        await storage().cron.insertSchedule(bare);
        const read = await storage().cron.getSchedule(bare.id);
        expect(read).toEqual(bare);
        expect(read).toMatchObject({ enabled: false, name: null, startAt: null, endAt: null, nextRunAt: null });
        const enabled = await storage().cron.updateSchedule(bare.id, 1, { enabled: true, startAt: T0 });
        expect(enabled).toMatchObject({ enabled: true, startAt: T0 });
        expect(await storage().cron.updateSchedule(bare.id, 2, { startAt: null })).toMatchObject({ startAt: null });
      });
    });

    describe('constraints', () => {
      it('allows one non-manual ledger row per (schedule, scheduled time) but any number of manual ones', async () => {
        const schedule = scheduleRow({ workflowName: uniqueName() });
        const manual = () => occurrence(schedule, T0, { id: newId(), source: 'manual' });
        const manualRows = [manual(), manual()];
        const sources = ['schedule', 'catchup', 'backfill'] as const;
        const scheduled = sources.map((source) => occurrence(schedule, T0, { id: newId(), source }));
        const result = await storage().cron.insertOccurrences([...manualRows, ...scheduled, manual()]);
        expect(result.existing).toBe(2);
        expect(result.claimed.map((row) => row.source).sort()).toEqual(['manual', 'manual', 'manual', 'schedule']);
        expect(await storage().cron.listOccurrences(schedule.id, 10, 0)).toHaveLength(4);
      });

      it('keeps idempotency keys and schedule names unique', async () => {
        const wf = workflowFixture(storage, SINGLE);
        const key = uniqueName('key');
        const first = await wf.create({ idempotencyKey: key });
        expect(
          (await storage().executions.createPipeline(newPipeline(wf.name, SINGLE, { idempotencyKey: key }))).created,
        ).toBe(false);
        expect(await storage().executions.getPipelineByIdempotencyKey(key)).toEqual(first);
        const name = uniqueName('name');
        const schedule = scheduleRow({ name, workflowName: wf.name });
        await storage().cron.insertSchedule(schedule);
        expect((await storage().cron.insertSchedule(scheduleRow({ name }))).created).toBe(false);
        expect(await storage().cron.getScheduleByName(name)).toEqual(schedule);
      });
    });

    describe('atomic units of work', () => {
      it('leaves no pipeline behind when one of its task rows cannot be written', async () => {
        const key = uniqueName('key');
        const pipeline = newPipeline(uniqueName(), { a: [], b: [] }, { idempotencyKey: key });
        // Two rows under one (pipeline, task id) key: the second insert fails.
        pipeline.tasks[1]!.taskId = pipeline.tasks[0]!.taskId;
        const failure = await storage()
          .executions.createPipeline(pipeline)
          .catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(DatabaseError);
        expect((failure as DatabaseError).message).toContain('createPipeline');
        expect((failure as DatabaseError).cause).toBeDefined();
        expect(await storage().executions.getPipeline(pipeline.id)).toBeNull();
        expect(await storage().executions.getPipelineByIdempotencyKey(key)).toBeNull();
        expect(await storage().executions.listTasks(pipeline.id)).toEqual([]);
        pipeline.tasks[1]!.taskId = 'b';
        expect((await storage().executions.createPipeline(pipeline)).created).toBe(true);
      });

      it('refuses a second pipeline with a taken id and adds none of its tasks', async () => {
        const wf = workflowFixture(storage, SINGLE);
        const first = await wf.create();
        const duplicate = newPipeline(wf.name, { x: [], y: [] }, { id: first.id });
        await expect(storage().executions.createPipeline(duplicate)).rejects.toBeInstanceOf(DatabaseError);
        expect(await storage().executions.getPipeline(first.id)).toEqual(first);
        expect((await storage().executions.listTasks(first.id)).map((task) => task.taskId)).toEqual(['only']);
      });

      it('deletes the tasks of a deleted pipeline with it (foreign key cascade)', async () => {
        const wf = workflowFixture(storage, { a: [], b: ['a'] });
        const pipeline = await wf.create();
        await storage().executions.cancelPipeline(pipeline.id, new Date('1990-01-01T00:00:00.000Z'));
        expect(await storage().executions.listTasks(pipeline.id)).toHaveLength(2);
        expect(await storage().executions.deleteTerminalPipelines(new Date('1990-01-01T00:00:00.001Z'), 10)).toBe(1);
        expect(await storage().executions.listTasks(pipeline.id)).toEqual([]);
      });
    });
  });
}
