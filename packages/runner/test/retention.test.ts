import { silentLogger } from '@orreryjs/core';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';
import { afterEach, expect, it } from 'vitest';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import { DefaultRunner, defineWorkflow, ManualClock } from '../src/index.js';
import { RetentionLoop } from '../src/retention.js';

const quick = defineWorkflow({ name: 'quick', tasks: [{ id: 'only', run: () => {} }] });
const file = tempSqliteFile();
afterEach(() => file.remove());

it('deletes terminal executions older than the retention age and keeps the rest', async () => {
  const clock = new ManualClock(new Date('2030-01-01T00:00:00Z'));
  const runner = await DefaultRunner.create({ database: `sqlite:${file.filename}`, workflows: [quick], clock });
  await runner.start();
  const old = await runner.execute('quick');
  clock.advance(10_000);
  const recent = await runner.execute('quick');
  await runner.shutdown();
  // A runner that never starts leaves its pipeline pending: not terminal, so never swept.
  const idle = await DefaultRunner.create({ database: `sqlite:${file.filename}`, workflows: [quick], clock });
  const unfinished = await idle.executeAsync('quick');
  await idle.shutdown();

  const storage = await openSqliteStorage({ filename: file.filename });
  try {
    const retention = new RetentionLoop({
      storage,
      executionsMs: 5_000,
      cronLedgerMs: Number.POSITIVE_INFINITY,
      clock,
      logger: silentLogger,
    });
    clock.advance(1_000);
    expect(await retention.sweep()).toMatchObject({ executions: 1, cronLedger: 0 });
    expect(await storage.executions.getPipeline(old.executionId)).toBeNull();
    expect(await storage.executions.listTasks(old.executionId)).toEqual([]);
    expect(await storage.executions.getPipeline(recent.executionId)).not.toBeNull();
    clock.advance(3_600_000);
    expect(await retention.sweep()).toMatchObject({ executions: 1, cronLedger: 0 });
    expect((await storage.executions.getPipeline(unfinished.id))?.status).toBe('pending');
  } finally {
    await storage.close();
  }
});

it('deletes the rows of runners silent for longer than the executions age, never a live one', async () => {
  const clock = new ManualClock(new Date('2030-01-01T00:00:00Z'));
  const gone = await DefaultRunner.create({ database: `sqlite:${file.filename}`, runnerId: 'gone', clock });
  await gone.start();
  await gone.shutdown();
  clock.advance(10_000);
  const live = await DefaultRunner.create({ database: `sqlite:${file.filename}`, runnerId: 'live', clock });
  await live.start();
  const storage = await openSqliteStorage({ filename: file.filename });
  try {
    const retention = new RetentionLoop({
      storage,
      executionsMs: 5_000,
      cronLedgerMs: Number.POSITIVE_INFINITY,
      clock,
      logger: silentLogger,
    });
    expect(await retention.sweep()).toEqual({ executions: 0, cronLedger: 0, runners: 1 });
    expect((await storage.runners.listRunners()).map((runner) => runner.id)).toEqual(['live']);
  } finally {
    await storage.close();
    await live.shutdown();
  }
});
