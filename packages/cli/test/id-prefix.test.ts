import { newId, type PipelineResult } from '@orreryjs/core';
import { DefaultRunner } from '@orreryjs/runner';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flaky, report } from './fixtures/workflows.js';
import { expectOneLineError, orreryInProcess, orreryInProcessJson } from './support/cli.js';
import { migratedSqliteDatabase } from './support/database.js';

const database = migratedSqliteDatabase();
const env = { ORRERY_DATABASE_URL: database.url };
const run = (args: string[]) => orreryInProcess(args, { env });
const json = <T>(args: string[]) => orreryInProcessJson<T>(args, { env });

/** 8 hex digits two stored executions share, and those two ids. */
const SHARED = 'abcdef01';
const twins = [`${SHARED}-0000-4000-8000-000000000001`, `${SHARED}-0000-4000-8000-000000000002`];

let completed: PipelineResult;
let failed: PipelineResult;

// Executions run by a real runner on the file; two more, written through the storage port,
// have ids that share their first 8 hex digits (random ids practically never do).
beforeAll(async () => {
  const runner = await DefaultRunner.create({ database: database.url, workflows: [report, flaky] });
  try {
    await runner.start();
    completed = await runner.execute('report', { batch: 1 });
    failed = await runner.execute('flaky');
  } finally {
    await runner.shutdown();
  }
  const storage = await openSqliteStorage({ filename: database.url.slice('sqlite:'.length), migrate: false });
  try {
    for (const id of twins) {
      await storage.executions.createPipeline({
        id,
        workflowName: 'report',
        workflowVersion: completed.workflowVersion,
        input: {},
        idempotencyKey: null,
        scheduledTime: null,
        now: new Date(),
        tasks: [{ id: newId(), taskId: 'extract', position: 0, pendingDeps: 0 }],
      });
    }
  } finally {
    await storage.close();
  }
});
afterAll(() => database.remove());

describe('execution ids given by a prefix', () => {
  it('resolves a unique prefix of 8 or more hex digits, with or without dashes, in show', async () => {
    const id = completed.executionId;
    for (const prefix of [id.slice(0, 8), id.slice(0, 13), id.slice(0, 20).toUpperCase(), id.replaceAll('-', '')]) {
      expect((await json<PipelineResult>(['executions', 'show', prefix])).executionId, prefix).toBe(id);
    }
    expect((await run(['executions', 'show', id.slice(0, 8)])).stdout).toMatch(new RegExp(`ID\\s+│ ${id}`));
  });

  it('resolves a prefix in cancel, pause, resume and retry, and reports the whole id', async () => {
    const prefix = completed.executionId.slice(0, 8);
    expect(await json(['executions', 'pause', prefix])).toEqual({
      executionId: completed.executionId,
      status: 'completed',
    });
    expect((await run(['executions', 'cancel', prefix])).stdout).toBe(
      `Execution ${completed.executionId} is completed: nothing to cancel.\n`,
    );
    expect(await json(['executions', 'resume', prefix])).toEqual({
      executionId: completed.executionId,
      status: 'completed',
    });
    const retried = await run(['executions', 'retry', failed.executionId.slice(0, 9)]);
    expect(retried.stdout).toBe(`Execution ${failed.executionId} is running again; tasks to run: give-up.\n`);
  });

  it('refuses a prefix several executions share as a usage error listing them, asking for more', async () => {
    const line = expectOneLineError(await run(['executions', 'show', SHARED]), 2, 'give more of its characters');
    for (const id of twins) expect(line).toContain(id);
    const usage = JSON.parse((await run(['executions', 'cancel', `${SHARED}-0000`, '--json'])).stderr) as {
      error: { code: string };
    };
    expect(usage.error.code).toBe('USAGE');
    expect((await json<PipelineResult>(['executions', 'show', twins[1]!])).executionId).toBe(twins[1]);
  });

  it('answers not found, naming the database, for a prefix no id has or one shorter than 8 digits', async () => {
    const unknown = completed.executionId.startsWith('0') ? '10000000' : '00000000';
    expectOneLineError(
      await run(['executions', 'show', unknown]),
      1,
      `No pipeline execution has id "${unknown}" in ${database.url}; ids are UUIDs, or their first 8 or more hex digits,`,
    );
    expectOneLineError(
      await run(['executions', 'pause', completed.executionId.slice(0, 7)]),
      1,
      'No pipeline execution',
    );
    expectOneLineError(
      await run(['executions', 'show', `${completed.executionId.slice(0, 8)}x`]),
      1,
      'No pipeline execution',
    );
  });
});
