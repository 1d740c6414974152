import { randomUUID } from 'node:crypto';
import type { PipelineResult, PipelineSummary } from '@orreryjs/core';
import { DefaultRunner } from '@orreryjs/runner';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskNode } from '../src/task-tree.js';
import { flaky, report } from './fixtures/workflows.js';
import { expectOneLineError, orreryInProcess, orreryInProcessJson } from './support/cli.js';
import { migratedSqliteDatabase } from './support/database.js';

const database = migratedSqliteDatabase();
const env = { ORRERY_DATABASE_URL: database.url };
const run = (args: string[]) => orreryInProcess(args, { env });
const json = <T>(args: string[]) => orreryInProcessJson<T>(args, { env });

let reportRun: PipelineResult;
let flakyRun: PipelineResult;

// Executions are produced by a real runner on the same file, then inspected through the CLI.
beforeAll(async () => {
  const runner = await DefaultRunner.create({
    database: database.url,
    workflows: [report, flaky],
    enableCronScheduling: false,
  });
  try {
    await runner.start();
    reportRun = await runner.execute('report', { batch: 7 });
    flakyRun = await runner.execute('flaky');
  } finally {
    await runner.shutdown();
  }
});
afterAll(() => database.remove());

describe('orrery executions list', () => {
  it('prints executions newest first in a table, ids shortened to the 8 characters commands take', async () => {
    const table = await run(['executions', 'list']);
    expect(table.status).toBe(0);
    const lines = table.stdout.split('\n');
    const flakyLine = lines.findIndex((line) => line.startsWith(`│ ${flakyRun.executionId.slice(0, 8)} │`));
    const reportLine = lines.findIndex((line) => line.startsWith(`│ ${reportRun.executionId.slice(0, 8)} │`));
    expect(flakyLine).toBeGreaterThan(0);
    expect(reportLine).toBeGreaterThan(flakyLine);
    expect(lines[reportLine]).toContain('completed');
    expect(lines[flakyLine]).toContain('failed');
  });

  it('fits 120 characters by default, and --wide shows whole ids, Started and Scheduled', async () => {
    const table = (await run(['executions', 'list'])).stdout;
    for (const line of table.split('\n')) expect(line.length, line).toBeLessThanOrEqual(120);
    expect(table).not.toContain(reportRun.executionId);
    expect(table).not.toContain('Started (UTC)');
    const wide = (await run(['executions', 'list', '--wide'])).stdout;
    for (const text of [reportRun.executionId, flakyRun.executionId, 'Started (UTC)', 'Scheduled (UTC)']) {
      expect(wide).toContain(text);
    }
  });

  it('filters by status and workflow, with --json', async () => {
    expect((await json<PipelineSummary[]>(['executions', 'list'])).map((e) => e.executionId)).toEqual([
      flakyRun.executionId,
      reportRun.executionId,
    ]);
    const failed = await json<PipelineSummary[]>(['executions', 'list', '--status', 'failed']);
    expect(failed.map((e) => [e.executionId, e.workflowName, e.status])).toEqual([
      [flakyRun.executionId, 'flaky', 'failed'],
    ]);
    expect(
      (await json<PipelineSummary[]>(['executions', 'list', '--workflow', 'report'])).map((e) => e.executionId),
    ).toEqual([reportRun.executionId]);
    expect((await run(['executions', 'list', '--workflow', 'ping'])).stdout).toBe('No executions.\n');
  });

  it('refuses an unknown status as a usage error', async () => {
    expectOneLineError(await run(['executions', 'list', '--status', 'done']), 2, 'pending, running, completed');
  });
});

describe('orrery executions show', () => {
  it('draws the task DAG with state, attempts and duration of each task', async () => {
    const shown = await run(['executions', 'show', reportRun.executionId]);
    expect(shown.status).toBe(0);
    expect(shown.stdout).toMatch(/Status\s+│ completed/);
    const tree = shown.stdout.slice(shown.stdout.indexOf('TASK'));
    const rows = tree.split('\n').filter((line) => line !== '');
    expect(rows.map((line) => line.split(/(?<=\S)\s{2,}/).slice(0, 3))).toEqual([
      ['TASK', 'STATE', 'ATTEMPTS'],
      ['extract', 'completed', '1'],
      ['└── transform', 'completed', '1'],
      ['    └── load', 'completed', '1'],
      ['        └── notify (also after: extract)', 'completed', '1'],
    ]);
    expect(rows.slice(1).every((line) => /\d+(ms|\.\ds)$/.test(line))).toBe(true);
  });

  it('shows retries and failures', async () => {
    const shown = await run(['executions', 'show', flakyRun.executionId]);
    expect(shown.status).toBe(0);
    expect(shown.stdout).toMatch(/wobble\s+completed\s+2 /);
    expect(shown.stdout).toMatch(/└── give-up\s+failed\s+1 .*no retry for this one/);
  });

  it('lists the attempts of a task that took more than one: outcome, runner, times and error', async () => {
    const shown = await run(['executions', 'show', flakyRun.executionId]);
    expect(shown.status).toBe(0);
    const [, section] = shown.stdout.split('Attempts of wobble:\n');
    const rows = section!.split('\n').filter((line) => line.startsWith('│'));
    const cells = rows.map((line) =>
      line
        .split('│')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
    const runner = flakyRun.tasks[0]!.attemptHistory[0]!.runnerId!;
    expect(cells.map((row) => [row[0], row[1], row[2], row[5]])).toEqual([
      ['Attempt', 'Outcome', 'Runner', 'Error'],
      ['1', 'failed', runner, expect.stringMatching(/^first attempt fails/)],
      ['2', 'completed', runner, '-'],
    ]);
    const [first] = flakyRun.tasks[0]!.attemptHistory;
    expect(cells[1]!.slice(3, 5)).toEqual([first!.startedAt.toISOString(), first!.endedAt.toISOString()]);
    for (const line of rows) expect(line.length, line).toBeLessThanOrEqual(120);
    // give-up failed at its first attempt: the tree's line says it all.
    expect(shown.stdout).not.toContain('Attempts of give-up');
  });

  it("prints the result with each task's dependencies as JSON", async () => {
    const shown = await json<Omit<PipelineResult, 'tasks'> & { tasks: TaskNode[] }>([
      'executions',
      'show',
      reportRun.executionId,
    ]);
    expect(shown).toMatchObject({ executionId: reportRun.executionId, workflowName: 'report', status: 'completed' });
    expect(shown.finalContext).toMatchObject({ batch: 7, rows: 3, transformed: 6 });
    expect(shown.tasks.map((t) => [t.taskId, t.status, t.attempts, t.dependsOn])).toEqual([
      ['extract', 'completed', 1, []],
      ['transform', 'completed', 1, ['extract']],
      ['load', 'completed', 1, ['transform']],
      ['notify', 'completed', 1, ['extract', 'load']],
    ]);
  });

  it('refuses an unknown execution id in one line', async () => {
    expectOneLineError(
      await run(['executions', 'show', randomUUID()]),
      1,
      /not found|no pipeline execution|no execution/i,
    );
  });

  it('names the database it read when an execution, schedule or workflow is not found', async () => {
    const id = randomUUID();
    expectOneLineError(
      await run(['executions', 'show', id]),
      1,
      `error: No pipeline execution has id "${id}" in ${database.url}; ids are UUIDs`,
    );
    expectOneLineError(await run(['executions', 'cancel', id]), 1, `"${id}" in ${database.url};`);
    expectOneLineError(
      await run(['schedules', 'show', 'nope']),
      1,
      `No cron schedule has name "nope" in ${database.url};`,
    );
    expectOneLineError(await run(['run', 'nope']), 1, `nor by any runner on ${database.url} (known:`);
  });

  // Last: it empties the workflows table.
  it('lists tasks flat, with a hint, when no runner stored the workflow definition', async () => {
    const file = new Database(database.url.slice('sqlite:'.length));
    file.prepare('DELETE FROM workflows').run();
    file.close();
    const shown = await run(['executions', 'show', reportRun.executionId]);
    expect(shown.status).toBe(0);
    expect(shown.stdout).not.toMatch(/└── \w/);
    expect(shown.stdout).toMatch(/\nnotify\s+completed\s+1 /);
    expect(shown.stdout).toContain('no runner has stored a definition of "report"');
  });
});

describe('orrery executions retry and list --schedule', () => {
  const scheduled = migratedSqliteDatabase();
  const scheduledEnv = { ORRERY_DATABASE_URL: scheduled.url };
  let triggered: PipelineResult;
  let failed: PipelineResult;
  let scheduleId: string;

  beforeAll(async () => {
    const runner = await DefaultRunner.create({
      database: scheduled.url,
      workflows: [report, flaky],
      enableCronScheduling: false,
    });
    try {
      await runner.start();
      scheduleId = (
        await runner.addCronSchedule({ name: 'nightly', workflowName: 'report', cronExpression: '0 0 * * *' })
      ).id;
      triggered = await (await runner.triggerCronSchedule('nightly')).wait();
      failed = await runner.execute('flaky');
    } finally {
      await runner.shutdown();
    }
  });
  afterAll(() => scheduled.remove());

  it('lists the executions a schedule started, by name or id, with their scheduled time', async () => {
    const byName = await orreryInProcessJson<PipelineSummary[]>(['executions', 'list', '--schedule', 'nightly'], {
      env: scheduledEnv,
    });
    expect(byName.map((e) => [e.executionId, e.scheduleId])).toEqual([[triggered.executionId, scheduleId]]);
    expect(byName[0]!.scheduledTime).not.toBeNull();
    const byId = await orreryInProcessJson<PipelineSummary[]>(['executions', 'list', '--schedule', scheduleId], {
      env: scheduledEnv,
    });
    expect(byId.map((e) => e.executionId)).toEqual([triggered.executionId]);
    expectOneLineError(
      await orreryInProcess(['executions', 'list', '--schedule', 'nope'], { env: scheduledEnv }),
      1,
      '"nope"',
    );
  });

  it('sets a failed execution running again from its failed tasks, and refuses a completed one', async () => {
    const retried = await orreryInProcess(['executions', 'retry', failed.executionId], { env: scheduledEnv });
    expect(retried.status).toBe(0);
    expect(retried.stdout).toBe(`Execution ${failed.executionId} is running again; tasks to run: give-up.\n`);
    expectOneLineError(
      await orreryInProcess(['executions', 'retry', triggered.executionId], { env: scheduledEnv }),
      1,
      'only a failed or cancelled execution can be retried',
    );
  });
});
