import type { CronExecution, CronSchedule } from '@orreryjs/runner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectOneLineError, orreryInProcess, orreryInProcessJson } from './support/cli.js';
import { migratedSqliteDatabase, registerFixtureWorkflows } from './support/database.js';

const database = migratedSqliteDatabase();
afterAll(() => database.remove());
const env = { ORRERY_DATABASE_URL: database.url };
const run = (args: string[]) => orreryInProcess(args, { env });
const json = <T>(args: string[]) => orreryInProcessJson<T>(args, { env });
// A worker with the fixture workflows registered them: the CLI knows them by name.
beforeAll(() => registerFixtureWorkflows(database.url));

/** The UTC date `days` before today, as YYYY-MM-DD: backfills must stay within the ledger retention (90 days). */
function daysAgo(days: number): string {
  const today = new Date();
  return new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - days))
    .toISOString()
    .slice(0, 10);
}
const [D1, D2, D3, D4] = [daysAgo(10), daysAgo(9), daysAgo(8), daysAgo(7)];

// The tests below build on one another, in order: add, read, change, fire, delete.
describe('orrery schedules', () => {
  let nightly: CronSchedule;

  it('add creates a schedule and prints every field in a table', async () => {
    const added = await run([
      'schedules',
      'add',
      'report',
      '0 2 * * *',
      '--name',
      'nightly',
      '--tz',
      'Europe/Paris',
      '--context',
      '{"region":"eu"}',
      '--catchup',
      'run_all',
    ]);
    expect(added.stderr).toBe('');
    expect(added.status).toBe(0);
    for (const text of ['nightly', 'report', '0 2 * * *', 'Europe/Paris', 'run_all', '{"region":"eu"}']) {
      expect(added.stdout).toContain(text);
    }
  });

  it('add with --json returns the stored schedule, and re-adding it unchanged returns the same one', async () => {
    const nightlyArgs = [
      'schedules',
      'add',
      'report',
      '0 2 * * *',
      '--name',
      'nightly',
      '--tz',
      'Europe/Paris',
      '--context',
      '{"region":"eu"}',
      '--catchup',
      'run_all',
    ];
    nightly = await json<CronSchedule>(nightlyArgs);
    expect(nightly).toMatchObject({
      name: 'nightly',
      workflowName: 'report',
      timezone: 'Europe/Paris',
      enabled: true,
      context: { region: 'eu' },
      catchupPolicy: 'run_all',
      overlapPolicy: 'allow',
      jitterMs: 0,
    });
    expect(nightly.id).toMatch(/^[0-9a-f-]{36}$/);
    // Stored as given or normalised to 6 fields; both mean 02:00 daily.
    expect(nightly.cronExpression).toMatch(/^(0 )?0 2 \* \* \*$/);
    const again = await json<CronSchedule>(nightlyArgs);
    expect(again.id).toBe(nightly.id);
    expect(again.createdAt).toBe(nightly.createdAt);
    const second = await json<CronSchedule>([
      'schedules',
      'add',
      'ping',
      '*/5 * * * *',
      '--name',
      'often',
      '--disabled',
    ]);
    expect(second.enabled).toBe(false);
  });

  it('add refuses bad input in one line: cron expression, unknown workflow, bad option value, taken name', async () => {
    expectOneLineError(await run(['schedules', 'add', 'report', '0 25 * * *']), 1, 'hour');
    expectOneLineError(
      await run(['schedules', 'add', 'missing', '0 2 * * *']),
      1,
      /"missing" .*known: flaky, ping, report/,
    );
    expectOneLineError(
      await run(['schedules', 'add', 'report', '0 2 * * *', '--catchup', 'sometimes']),
      2,
      'skip, run_once, run_all',
    );
    expectOneLineError(await run(['schedules', 'add', 'report', '0 3 * * *', '--name', 'nightly']), 1, 'nightly');
    expectOneLineError(await run(['schedules', 'add', 'report', '0 2 * * *', '--context', '[1]']), 2, 'JSON object');
  });

  it('list prints a table of schedules, filters, and --json', async () => {
    const table = await run(['schedules', 'list']);
    expect(table.status).toBe(0);
    expect(table.stdout).toContain('Next run (UTC)');
    expect(table.stdout).toContain('nightly');
    expect(table.stdout).toContain('often');
    expect((await json<CronSchedule[]>(['schedules', 'list'])).map((s) => s.name).sort()).toEqual(['nightly', 'often']);
    expect((await json<CronSchedule[]>(['schedules', 'list', '--enabled-only'])).map((s) => s.name)).toEqual([
      'nightly',
    ]);
    expect((await json<CronSchedule[]>(['schedules', 'list', '--workflow', 'ping'])).map((s) => s.name)).toEqual([
      'often',
    ]);
    expect((await run(['schedules', 'list', '--workflow', 'nothing'])).stdout).toBe('No schedules.\n');
    expectOneLineError(await run(['schedules', 'list', '--limit', '0']), 2, '--limit');
  });

  it('show finds a schedule by name or id, and refuses an unknown one', async () => {
    const byName = await run(['schedules', 'show', 'nightly']);
    expect(byName.status).toBe(0);
    expect(byName.stdout).toContain(nightly.id);
    expect(byName.stdout).toMatch(/Next run \(UTC\)\s+│ \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000Z/);
    expect((await json<CronSchedule>(['schedules', 'show', nightly.id.toUpperCase()])).name).toBe('nightly');
    expectOneLineError(await run(['schedules', 'show', 'no-such-schedule']), 1, 'no-such-schedule');
  });

  it('pause and resume flip enabled', async () => {
    expect((await run(['schedules', 'pause', 'nightly'])).stdout).toMatch(/Enabled\s+│ no/);
    expect((await json<CronSchedule>(['schedules', 'show', 'nightly'])).enabled).toBe(false);
    const resumed = await json<CronSchedule>(['schedules', 'resume', 'nightly']);
    expect(resumed.enabled).toBe(true);
    expect(resumed.nextRunAt).not.toBeNull();
    expectOneLineError(await run(['schedules', 'pause', 'no-such-schedule']), 1, 'no-such-schedule');
    expectOneLineError(await run(['schedules', 'resume']), 2, "missing required argument 'schedule'");
  });

  it('update changes only the given fields', async () => {
    const table = await run(['schedules', 'update', 'nightly', '--cron', '30 3 * * *']);
    expect(table.status).toBe(0);
    expect(table.stdout).toContain('30 3 * * *');
    const updated = await json<CronSchedule>(['schedules', 'update', 'nightly', '--tz', 'UTC', '--jitter-ms', '500']);
    expect(updated).toMatchObject({
      timezone: 'UTC',
      jitterMs: 500,
      context: { region: 'eu' },
    });
    expect(updated.cronExpression).toMatch(/^(0 )?30 3 \* \* \*$/);
  });

  it('update refuses an empty patch, an invalid timezone and an unknown schedule', async () => {
    expectOneLineError(await run(['schedules', 'update', 'nightly']), 2, 'nothing to update');
    expectOneLineError(await run(['schedules', 'update', 'nightly', '--tz', 'Mars/Olympus']), 1, 'Mars/Olympus');
    expectOneLineError(
      await run(['schedules', 'update', 'no-such-schedule', '--cron', '@daily']),
      1,
      'no-such-schedule',
    );
  });

  it('trigger starts a pipeline now and prints its id', async () => {
    const text = await run(['schedules', 'trigger', 'nightly']);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(
      /^Triggered schedule "nightly" \([0-9a-f-]{36}\): execution [0-9a-f-]{36} of workflow "report"/,
    );
    const triggered = await json<{ executionId: string; scheduleId: string; workflowName: string }>([
      'schedules',
      'trigger',
      'nightly',
    ]);
    expect(triggered).toMatchObject({ scheduleId: nightly.id, workflowName: 'report' });
    const executions = await json<Array<{ executionId: string }>>(['executions', 'list']);
    expect(executions.map((e) => e.executionId)).toContain(triggered.executionId);
  });

  it("trigger follows a skip schedule's overlap policy, and --force starts one anyway", async () => {
    expect((await run(['schedules', 'add', 'report', '@daily', '--name', 'single', '--overlap', 'skip'])).status).toBe(
      0,
    );
    // No worker runs here: the first pipeline stays pending, so it stays active.
    const first = await json<{ executionId: string }>(['schedules', 'trigger', 'single']);
    expectOneLineError(await run(['schedules', 'trigger', 'single']), 1, first.executionId);
    const forced = await json<{ executionId: string }>(['schedules', 'trigger', 'single', '--force']);
    expect(forced.executionId).not.toBe(first.executionId);
    const history = await json<Array<{ source: string; status: string }>>(['schedules', 'history', 'single']);
    expect(history.map((r) => [r.source, r.status]).sort()).toEqual([
      ['manual', 'handed_off'],
      ['manual', 'handed_off'],
      ['manual', 'skipped'],
    ]);
    expect((await run(['schedules', 'delete', 'single'])).status).toBe(0);
  });

  it('trigger refuses an unknown schedule', async () => {
    expectOneLineError(await run(['schedules', 'trigger', 'no-such-schedule']), 1, 'no-such-schedule');
  });

  it('backfill fills the empty slots of a range once', async () => {
    const args = ['schedules', 'backfill', 'nightly', '--start', D1!, '--end', D4!];
    const first = await run(args);
    expect(first.status).toBe(0);
    expect(first.stdout).toContain('3 created, 0 already present');
    expect(await json<{ created: number; existing: number }>(args)).toMatchObject({ created: 0, existing: 3 });
  });

  it('backfill refuses a range older than the ledger retention, saying why', async () => {
    const line = expectOneLineError(
      await run(['schedules', 'backfill', 'nightly', '--start', '2024-01-01', '--end', '2024-01-04']),
      1,
      "older than the cron ledger's retention",
    );
    expect(line).toContain('would run again');
  });

  it('backfill refuses a missing or malformed range', async () => {
    expectOneLineError(await run(['schedules', 'backfill', 'nightly', '--end', '2024-01-04']), 2, '--start');
    expectOneLineError(
      await run(['schedules', 'backfill', 'nightly', '--start', 'yesterday', '--end', '2024-01-04']),
      2,
      'ISO-8601',
    );
  });

  it('history lists manual and backfilled occurrences, newest first', async () => {
    const table = await run(['schedules', 'history', 'nightly']);
    expect(table.status).toBe(0);
    expect(table.stdout).toContain(`${D3}T`);
    expect(table.stdout).toContain('backfill');
    expect(table.stdout).toContain('manual');
    const rows = await json<CronExecution[]>(['schedules', 'history', 'nightly']);
    expect(
      rows
        .filter((r) => r.source === 'backfill')
        .map((r) => r.scheduledTime)
        .sort(),
    ).toEqual([D1, D2, D3].map((day) => expect.stringMatching(new RegExp(`^${day}T`))));
    expect(rows.filter((r) => r.source === 'manual')).toHaveLength(2);
    expect(rows.every((r) => r.status === 'handed_off' && r.pipelineExecutionId !== null)).toBe(true);
    expect(await json<CronExecution[]>(['schedules', 'history', 'nightly', '--limit', '2'])).toHaveLength(2);
    expectOneLineError(await run(['schedules', 'history', 'no-such-schedule']), 1, 'no-such-schedule');
  });

  it('delete removes a schedule, and refuses an unknown one', async () => {
    const text = await run(['schedules', 'delete', 'often']);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^Deleted schedule "often" \([0-9a-f-]{36}\); its history is kept\.\n$/);
    expect(await json<{ deleted: boolean; id: string; name: string }>(['schedules', 'delete', 'nightly'])).toEqual({
      deleted: true,
      id: nightly.id,
      name: 'nightly',
    });
    expect(await json<CronSchedule[]>(['schedules', 'list'])).toEqual([]);
    expectOneLineError(await run(['schedules', 'delete', 'nightly']), 1, 'nightly');
  });
});

// The fields that shape what a schedule does around overlaps, failures and DST, set and
// cleared through the CLI and read back from the database by a later command.
describe('orrery schedules: overlap, pause on failure, run limit, DST and note', () => {
  const guardedArgs = [
    'schedules',
    'add',
    'report',
    '30 2 * * *',
    '--name',
    'guarded',
    '--tz',
    'America/New_York',
    '--overlap',
    'buffer_one',
    '--pause-on-failure',
    '--max-runs',
    '3',
    '--dst',
    'repeated=last,gap=skip',
    '--note',
    'owned by the data team',
  ];

  it('add stores every new field, and show and list print them', async () => {
    const added = await run(guardedArgs);
    expect(added.stderr).toBe('');
    expect(added.status).toBe(0);
    const stored = await json<CronSchedule>(['schedules', 'show', 'guarded']);
    expect(stored).toMatchObject({
      overlapPolicy: 'buffer_one',
      pauseOnFailure: true,
      maxRuns: 3,
      runCount: 0,
      dst: { repeated: 'last', gap: 'skip' },
      note: 'owned by the data team',
    });
    const table = (await run(['schedules', 'show', 'guarded'])).stdout;
    expect(table).toMatch(/Overlap\s+│ buffer_one/);
    expect(table).toMatch(/Pause on failure\s+│ yes/);
    expect(table).toMatch(/Runs\s+│ 0 of at most 3/);
    expect(table).toMatch(/DST\s+│ repeated=last,gap=skip/);
    expect(table).toMatch(/Note\s+│ owned by the data team/);
    const list = (await run(['schedules', 'list'])).stdout;
    expect(list).toMatch(/│ Runs\s+│/);
    expect(list).toMatch(/│ 0 of 3\s+│/);
    expect(list).toContain('owned by the data team');
  });

  it('update sets each overlap policy and a partial DST choice, keeping the other fields', async () => {
    for (const overlap of ['buffer_all', 'cancel_other', 'skip', 'allow'] as const) {
      expect((await json<CronSchedule>(['schedules', 'update', 'guarded', '--overlap', overlap])).overlapPolicy).toBe(
        overlap,
      );
    }
    const updated = await json<CronSchedule>([
      'schedules',
      'update',
      'guarded',
      '--dst',
      'gap=shift',
      '--max-runs',
      '5',
    ]);
    // The rule left out takes the fixed hour's default, not the stored one.
    expect(updated).toMatchObject({ dst: { repeated: 'first', gap: 'shift' }, maxRuns: 5, pauseOnFailure: true });
    expect(await json<CronSchedule>(['schedules', 'show', 'guarded'])).toMatchObject({
      overlapPolicy: 'allow',
      dst: { repeated: 'first', gap: 'shift' },
      maxRuns: 5,
      note: 'owned by the data team',
    });
  });

  it('update clears the run limit, DST choice, note and window with --no-… flags', async () => {
    await json<CronSchedule>(['schedules', 'update', 'guarded', '--end-at', '2099-01-01T00:00:00Z']);
    const cleared = await json<CronSchedule>([
      'schedules',
      'update',
      'guarded',
      '--no-pause-on-failure',
      '--no-max-runs',
      '--no-dst',
      '--no-note',
      '--no-end-at',
    ]);
    expect(cleared).toMatchObject({ pauseOnFailure: false, maxRuns: null, dst: null, note: null, endAt: null });
    expect((await run(['schedules', 'show', 'guarded'])).stdout).toMatch(/DST\s+│ default rules/);
  });

  it('refuses bad values of the new fields in one line and writes nothing', async () => {
    const before = await json<CronSchedule>(['schedules', 'show', 'guarded']);
    const attempt = (extra: string[]) => run([...guardedArgs.slice(0, 5), 'refused', ...extra]);
    expectOneLineError(await attempt(['--overlap', 'queue']), 2, 'allow, skip, buffer_one, buffer_all, cancel_other');
    expectOneLineError(await attempt(['--max-runs', '0']), 2, 'at least 1');
    expectOneLineError(await attempt(['--dst', 'repeated=twice']), 2, 'repeated=first|last|both and/or gap=shift|skip');
    expectOneLineError(await attempt(['--dst', 'gap=skip,gap=shift']), 2, 'gap is given twice');
    expectOneLineError(
      await attempt(['--note', 'x'.repeat(1001)]),
      1,
      'note must be a string of at most 1000 characters',
    );
    expectOneLineError(await attempt(['--no-max-runs']), 2, "unknown option '--no-max-runs'");
    expectOneLineError(await run(['schedules', 'update', 'guarded', '--max-runs', 'many']), 2, 'whole number');
    expectOneLineError(await run(['schedules', 'update', 'guarded', '--dst', 'first']), 2, 'not "first"');
    expectOneLineError(await run(['schedules', 'show', 'refused']), 1, 'refused');
    expect(await json<CronSchedule>(['schedules', 'show', 'guarded'])).toEqual(before);
  });

  it('pause stores a note, shown until resume clears it', async () => {
    const paused = await json<CronSchedule>(['schedules', 'pause', 'guarded', '--note', 'vendor outage until Monday']);
    expect(paused).toMatchObject({ enabled: false, note: 'vendor outage until Monday' });
    expect((await run(['schedules', 'list'])).stdout).toContain('vendor outage until Monday');
    expect(await json<CronSchedule>(['schedules', 'resume', 'guarded'])).toMatchObject({ enabled: true, note: null });
  });
});

describe('orrery schedules list and history widths', () => {
  const note = `escalate to ${'the on-call data engineer, '.repeat(6)}then wait`;

  it('fits 120 characters by default, cutting a long note; --wide shows id, timezone and the whole note', async () => {
    const added = await json<CronSchedule>([
      'schedules',
      'add',
      'report',
      '0 */6 * * 1-5',
      '--name',
      'wide-check',
      '--tz',
      'Europe/Paris',
      '--note',
      note,
    ]);
    const table = (await run(['schedules', 'list'])).stdout.split('\n');
    for (const line of table) expect(line.length, line).toBeLessThanOrEqual(120);
    const row = table.find((line) => line.includes('wide-check'))!;
    expect(row).toContain('0 */6 * * 1-5');
    expect(row).toMatch(/escalate to .*…/);
    expect(table.join('\n')).not.toContain(added.id);

    const wide = (await run(['schedules', 'list', '--wide'])).stdout;
    for (const text of [added.id, 'Europe/Paris', 'Last run (UTC)', note]) expect(wide).toContain(text);

    const { executionId } = await json<{ executionId: string }>(['schedules', 'trigger', 'wide-check']);
    const history = (await run(['schedules', 'history', 'wide-check'])).stdout.split('\n');
    for (const line of history) expect(line.length, line).toBeLessThanOrEqual(120);
    expect(history.join('\n')).not.toContain('Claimed (UTC)');
    expect(history.join('\n')).toContain(`│ ${executionId.slice(0, 8)} `);
    const wideHistory = (await run(['schedules', 'history', 'wide-check', '--wide'])).stdout;
    expect(wideHistory).toContain(executionId);
    expect(wideHistory).toContain('Claimed (UTC)');
    expect((await run(['schedules', 'delete', 'wide-check'])).status).toBe(0);
  });
});
