import { MAX_PAGE_VALUE } from '@orreryjs/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DatabaseError,
  DefaultRunner,
  defineWorkflow,
  type ExecuteOptions,
  ManualClock,
  ValidationError,
} from '../src/index.js';
import { ADAPTERS, type TestDatabase } from './support.js';

const quick = defineWorkflow({ name: 'quick', tasks: [{ id: 'only', run: () => {} }] });
const YEAR_10000 = new Date('+010000-01-01T00:00:00.000Z');

/** Registers hooks that open a runner of `quick` (not started) on a fresh database for each test. */
function useRunner(adapter: (typeof ADAPTERS)[number]): () => DefaultRunner {
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
  return () => runner;
}

/**
 * Dates a column cannot hold are refused where they enter, the same way on every adapter: a
 * ValidationError naming the field, before anything is written (Postgres used to fail with a
 * DatabaseError, SQLite used to store them).
 */
describe.each(ADAPTERS)('dates no column holds, on $name', (adapter) => {
  const opened = useRunner(adapter);
  let runner: DefaultRunner;
  beforeEach(() => {
    runner = opened();
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

/** The rejection of `call`, which must reject. */
async function rejectionOf(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => expect.fail('the call resolved'),
    (error: unknown) => error,
  );
}

/** Pages no listing accepts: each is refused before the query, never sent to fail there. */
const BAD_PAGES: ReadonlyArray<{ limit?: unknown; offset?: unknown }> = [
  { offset: 1e20 },
  { offset: -1 },
  { offset: 1.5 },
  { offset: Number.NaN },
  { offset: '1' },
  { limit: 0 },
  { limit: -1 },
  { limit: 1e20 },
  { limit: 2.5 },
  { limit: Number.NaN },
];

/**
 * Every listing checks its paging the same way, on every adapter: a ValidationError naming
 * the bad value (listExecutions used to send an offset of 1e20 to the database, which failed
 * with a DatabaseError), and the largest values accepted reach both databases fine.
 */
describe.each(ADAPTERS)('paging of every listing, on $name', (adapter) => {
  const runner = useRunner(adapter);
  type Page = { limit?: number; offset?: number };
  const listings: ReadonlyArray<{ name: string; maxLimit: number; list: (page: Page) => Promise<unknown[]> }> = [
    { name: 'listExecutions', maxLimit: 1000, list: (page) => runner().listExecutions(page) },
    { name: 'listCronSchedules', maxLimit: MAX_PAGE_VALUE, list: (page) => runner().listCronSchedules(page) },
    {
      name: 'getCronExecutionHistory',
      maxLimit: MAX_PAGE_VALUE,
      list: (page) => runner().getCronExecutionHistory('daily', page),
    },
  ];

  beforeEach(async () => {
    // One row in each listing: a schedule, and a triggered occurrence with its pipeline.
    await runner().addCronSchedule({ name: 'daily', workflowName: 'quick', cronExpression: '0 0 * * *' });
    await runner().triggerCronSchedule('daily');
  });

  it.each(listings)('$name refuses every bad limit and offset with a ValidationError', async ({ list }) => {
    for (const page of BAD_PAGES) {
      const error = await rejectionOf(list(page as Page));
      expect(error, JSON.stringify(page)).toBeInstanceOf(ValidationError);
      expect(error, JSON.stringify(page)).not.toBeInstanceOf(DatabaseError);
      expect(String(error)).toMatch(
        /(limit|offset) must be an integer from \d+ to \d+( \(Number.MAX_SAFE_INTEGER\))?, got /,
      );
    }
  });

  it.each(listings)('$name accepts the largest limit and offset', async ({ list, maxLimit }) => {
    expect(await list({ limit: maxLimit })).toHaveLength(1);
    expect(await list({ offset: MAX_PAGE_VALUE })).toEqual([]);
    expect(await list({ limit: maxLimit, offset: MAX_PAGE_VALUE })).toEqual([]);
  });
});

/**
 * ExecuteOptions are checked whole, the same way on every adapter: a key they do not have (a
 * typo, a field of another library) is a ValidationError naming the nearest valid key, a bad
 * `priority` or `concurrencyKey` a ValidationError naming the option, and nothing is written.
 * They used to be ignored.
 */
describe.each(ADAPTERS)('unknown execute options, on $name', (adapter) => {
  const runner = useRunner(adapter);
  // Typed as ExecuteOptions the way a caller holding a loosely typed object would pass them.
  const unknownOptions: ReadonlyArray<{ options: ExecuteOptions; message: RegExp }> = [
    {
      options: { prio: 10 } as ExecuteOptions,
      message: /^Unknown ExecuteOptions key "prio": did you mean "priority"\? The keys are idempotencyKey, /,
    },
    {
      options: { priority: 1001 },
      message:
        /^ExecuteOptions.priority must be an integer from -1000 to 1000 \(higher is claimed first\), got 1001\.$/,
    },
    { options: { priority: 1.5 }, message: /^ExecuteOptions.priority must be an integer/ },
    {
      options: { concurrencyKey: 42 } as unknown as ExecuteOptions,
      message:
        /^ExecuteOptions.concurrencyKey must be a string without NUL characters of at most 1024 bytes, got 42\.$/,
    },
    {
      options: { idempotencykey: 'k1' } as ExecuteOptions,
      message: /"idempotencykey": did you mean "idempotencyKey"\?/,
    },
    { options: { timeout: 5_000 } as ExecuteOptions, message: /"timeout": did you mean "timeoutMs"\?/ },
  ];

  it.each(unknownOptions)(
    'executeAsync and execute refuse $options and write nothing',
    async ({ options, message }) => {
      for (const call of [runner().executeAsync('quick', {}, options), runner().execute('quick', {}, options)]) {
        const error = await rejectionOf(call);
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as Error).message).toMatch(message);
      }
      expect(await runner().listExecutions()).toEqual([]);
    },
  );

  it('executeAsyncMany refuses the whole batch for an unknown option of one request', async () => {
    const error = await rejectionOf(
      runner().executeAsyncMany([
        { workflowName: 'quick', options: { idempotencyKey: 'k0' } },
        { workflowName: 'quick', options: { idempotencykey: 'k1' } as never },
      ]),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/"idempotencykey": did you mean "idempotencyKey"\?/);
    expect(await runner().listExecutions()).toEqual([]);
  });

  it('executeAsyncMany refuses the whole batch for an unknown key of one request', async () => {
    const error = await rejectionOf(
      runner().executeAsyncMany([
        { workflowName: 'quick' },
        { workflowName: 'quick', optoins: { idempotencyKey: 'k1' } } as never,
      ]),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(
      /^Unknown executeAsyncMany request 1 key "optoins": did you mean "options"\? The keys are workflowName, context, options\.$/,
    );
    expect(await runner().listExecutions()).toEqual([]);
  });

  it('refuses options that are not an object', async () => {
    const error = await rejectionOf(runner().executeAsync('quick', {}, null as never));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/^ExecuteOptions must be an object .*, got null\.$/);
    expect(await runner().listExecutions()).toEqual([]);
  });

  it('still accepts every known option', async () => {
    const runAt = new Date('2027-01-01T00:00:00.000Z');
    const [one] = await runner().executeAsyncMany([
      { workflowName: 'quick', context: {}, options: { idempotencyKey: 'many', timeoutMs: 1_000, runAt } },
    ]);
    const two = await runner().executeAsync('quick', {}, { idempotencyKey: 'single', timeoutMs: 1_000, runAt });
    expect((await runner().listExecutions()).map((summary) => summary.executionId).sort()).toEqual(
      [one!.id, two.id].sort(),
    );
  });
});
