import { MAX_STORABLE_DATE, MIN_STORABLE_DATE, newId, ValidationError } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import {
  newPipeline,
  type OpenStorage,
  occurrence,
  SINGLE,
  scheduleRow,
  T0,
  uniqueName,
  useStorage,
} from './fixtures.js';

/** Instants no adapter stores: Postgres reads only four-digit years, and SQLite must refuse the same. */
const UNSTORABLE: ReadonlyArray<[string, Date]> = [
  ['the year 10000', new Date('+010000-01-01T00:00:00.000Z')],
  ['a millisecond past 9999', new Date(MAX_STORABLE_DATE.getTime() + 1)],
  ['the year 0', new Date('0000-12-31T23:59:59.999Z')],
  ['the largest Date', new Date(8.64e15)],
];

/**
 * Input at the edge of what a column holds is refused the same way by every adapter, with a
 * ValidationError before anything is written (not a DatabaseError on one and silence on another).
 */
export function describeEdgeInput(open: OpenStorage): void {
  describe('edge input', () => {
    const storage = useStorage(open, 'all');

    it('stores the first and the last instant of the range and reads them back unchanged', async () => {
      const schedule = scheduleRow({
        workflowName: uniqueName(),
        startAt: MIN_STORABLE_DATE,
        endAt: MAX_STORABLE_DATE,
        nextRunAt: MAX_STORABLE_DATE,
      });
      await storage().cron.insertSchedule(schedule);
      expect(await storage().cron.getSchedule(schedule.id)).toMatchObject({
        startAt: MIN_STORABLE_DATE,
        endAt: MAX_STORABLE_DATE,
        nextRunAt: MAX_STORABLE_DATE,
      });
      const pipeline = newPipeline(uniqueName(), SINGLE, { scheduledTime: MIN_STORABLE_DATE });
      await storage().executions.createPipeline(pipeline);
      expect((await storage().executions.getPipeline(pipeline.id))!.scheduledTime).toEqual(MIN_STORABLE_DATE);
    });

    describe.each(UNSTORABLE)('%s', (_what, instant) => {
      it('is refused in a schedule with a ValidationError naming it, and nothing is written', async () => {
        for (const field of ['startAt', 'endAt', 'nextRunAt'] as const) {
          const schedule = scheduleRow({ workflowName: uniqueName(), [field]: instant });
          const failure = await storage()
            .cron.insertSchedule(schedule)
            .catch((error: unknown) => error);
          expect(failure, field).toBeInstanceOf(ValidationError);
          expect((failure as Error).message).toContain(instant.toISOString());
          expect(await storage().cron.getSchedule(schedule.id)).toBeNull();
        }
      });

      it('is refused as a pipeline scheduled time with a ValidationError, and nothing is written', async () => {
        const pipeline = newPipeline(uniqueName(), SINGLE, { scheduledTime: instant });
        await expect(storage().executions.createPipeline(pipeline)).rejects.toBeInstanceOf(ValidationError);
        expect(await storage().executions.getPipeline(pipeline.id)).toBeNull();
      });

      it('is refused as an occurrence time with a ValidationError, and nothing is written', async () => {
        const schedule = scheduleRow({ workflowName: uniqueName() });
        await storage().cron.insertSchedule(schedule);
        const fine = occurrence(schedule, T0);
        const bad = occurrence(schedule, T0, { id: newId(), fireAt: instant });
        await expect(storage().cron.insertOccurrences([fine, bad])).rejects.toBeInstanceOf(ValidationError);
        expect(await storage().cron.listOccurrences(schedule.id, 10, 0)).toEqual([]);
      });
    });
  });
}
