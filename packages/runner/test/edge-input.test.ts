import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DefaultRunner, defineWorkflow, ManualClock, ValidationError } from '../src/index.js';
import { ADAPTERS, type TestDatabase } from './support.js';

const quick = defineWorkflow({ name: 'quick', tasks: [{ id: 'only', run: () => {} }] });
const YEAR_10000 = new Date('+010000-01-01T00:00:00.000Z');

/**
 * Dates a column cannot hold are refused where they enter, the same way on every adapter: a
 * ValidationError naming the field, before anything is written (Postgres used to fail with a
 * DatabaseError, SQLite used to store them).
 */
describe.each(ADAPTERS)('dates no column holds, on $name', (adapter) => {
  let db: TestDatabase;
  let runner: DefaultRunner;

  beforeEach(async () => {
    db = adapter.open();
    runner = await DefaultRunner.create({
      ...db.config,
      workflows: [quick],
      clock: new ManualClock(new Date('2026-01-01T00:00:00.000Z')),
    });
  });

  afterEach(async () => {
    await runner.shutdown();
    await db.remove();
  });

  it.each(['startAt', 'endAt'] as const)(
    'refuses a schedule %s past 9999, naming it, and adds nothing',
    async (field) => {
      const added = runner.addCronSchedule({
        name: 'far',
        workflowName: 'quick',
        cronExpression: '0 0 * * *',
        [field]: YEAR_10000,
      });
      await expect(added).rejects.toBeInstanceOf(ValidationError);
      await expect(added).rejects.toThrow(`${field} +010000-01-01T00:00:00.000Z is outside`);
      expect(await runner.listCronSchedules()).toEqual([]);
    },
  );

  it('refuses a schedule update to an endAt past 9999 and keeps the schedule as it was', async () => {
    await runner.addCronSchedule({ name: 'daily', workflowName: 'quick', cronExpression: '0 0 * * *' });
    await expect(runner.updateCronSchedule('daily', { endAt: YEAR_10000 })).rejects.toBeInstanceOf(ValidationError);
    expect((await runner.getCronSchedule('daily')).endAt).toBeNull();
  });

  it('refuses a backfill range starting before the year 1, and writes no ledger row', async () => {
    await runner.addCronSchedule({ name: 'daily', workflowName: 'quick', cronExpression: '0 0 * * *' });
    const backfill = runner.backfillCronSchedule('daily', {
      start: new Date('0000-06-01T00:00:00.000Z'),
      end: new Date('2025-12-01T00:00:00.000Z'),
    });
    await expect(backfill).rejects.toBeInstanceOf(ValidationError);
    await expect(backfill).rejects.toThrow(/^start -?0000/);
    expect(await runner.getCronExecutionHistory('daily')).toEqual([]);
  });

  it('refuses a pipeline scheduled past 9999 and writes nothing', async () => {
    await expect(runner.executeAsync('quick', {}, { scheduledTime: YEAR_10000 })).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect(await runner.listExecutions()).toEqual([]);
  });
});
