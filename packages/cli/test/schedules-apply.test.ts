import { writeFileSync } from 'node:fs';
import type { CronSchedule } from '@orreryjs/runner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import { expectOneLineError, orrery, orreryJson } from './support/cli.js';
import { migratedSqliteDatabase, registerFixtureWorkflows } from './support/database.js';

const database = migratedSqliteDatabase();
const files: Array<() => void> = [database.remove];
afterAll(() => {
  for (const remove of files) remove();
});
const env = { ORRERY_DATABASE_URL: database.url };
const run = (args: string[]) => orrery(args, { env });
const json = <T>(args: string[]) => orreryJson<T>(args, { env });
beforeAll(() => registerFixtureWorkflows(database.url));

/** Writes `content` (JSON unless a string) to a temporary file and returns its path. */
function scheduleFile(content: unknown): string {
  const { filename, remove } = tempSqliteFile();
  files.push(remove);
  writeFileSync(filename, typeof content === 'string' ? content : JSON.stringify(content));
  return filename;
}

/** Every schedule, as the CLI lists them, by name. */
const stored = () =>
  Object.fromEntries(json<CronSchedule[]>(['schedules', 'list']).map((schedule) => [schedule.name, schedule]));

// The tests build on one another, in order.
describe('orrery schedules apply', () => {
  const deploy = [
    { name: 'app.nightly', workflowName: 'report', cronExpression: '0 2 * * *', timezone: 'Europe/Paris' },
    { name: 'app.poll', workflowName: 'ping', cronExpression: '@every 5m', startAt: '2030-01-01T00:00:00Z' },
  ];

  it('creates the listed schedules and prints the plan as a diff', () => {
    expect(json<CronSchedule>(['schedules', 'add', 'ping', '0 * * * *', '--name', 'manual'])).toMatchObject({
      name: 'manual',
    });
    const applied = run(['schedules', 'apply', scheduleFile(deploy)]);
    expect(applied.stderr).toBe('');
    expect(applied.status).toBe(0);
    expect(applied.stdout).toBe(
      '+ app.nightly\n+ app.poll\nApplied: 2 to create, 0 to update, 0 to prune, 0 unchanged.\n',
    );
    expect(stored()).toMatchObject({
      'app.nightly': { timezone: 'Europe/Paris', enabled: true },
      'app.poll': { cronExpression: '@every 5m', startAt: '2030-01-01T00:00:00.000Z' },
      manual: { enabled: true },
    });
  });

  it('on --dry-run prints updates and prunes in scope and writes nothing', () => {
    const before = stored();
    const changed = [{ ...deploy[0]!, cronExpression: '0 3 * * *', context: { v: 2 } }];
    const planned = run([
      'schedules',
      'apply',
      scheduleFile(changed),
      '--prune',
      'delete',
      '--scope-prefix',
      'app.',
      '--dry-run',
    ]);
    expect(planned.stderr).toBe('');
    expect(planned.status).toBe(0);
    expect(planned.stdout).toBe(
      '~ app.nightly: cronExpression, context\n- app.poll (delete)\nDry run: 0 to create, 1 to update, 1 to prune, 0 unchanged; nothing written.\n',
    );
    expect(stored()).toEqual(before);
  });

  it('applies pruning by pause within the scope only, and reports unchanged entries with --json', () => {
    const plan = json<Record<string, unknown>>([
      'schedules',
      'apply',
      scheduleFile([deploy[0]]),
      '--prune',
      'pause',
      '--scope-prefix',
      'app.',
    ]);
    expect(plan).toEqual({ dryRun: false, created: [], updated: [], unchanged: ['app.nightly'], pruned: ['app.poll'] });
    expect(stored()).toMatchObject({
      'app.poll': { enabled: false, note: 'removed from the synced list' },
      manual: { enabled: true },
    });
  });

  it('refuses bad input in one line, exit code 1, writing nothing', () => {
    const before = stored();
    const bad = [deploy[0], { ...deploy[1], cronExpression: '*/7 * * * *' }, { ...deploy[1], name: 'x', tz: 'UTC' }];
    expectOneLineError(run(['schedules', 'apply', scheduleFile(bad)]), 1, /schedules\[2\].*"tz"/);
    expectOneLineError(
      run(['schedules', 'apply', scheduleFile([{ ...deploy[1], startAt: 'soon' }])]),
      1,
      'schedules[0]: startAt must be an ISO-8601 instant',
    );
    expectOneLineError(run(['schedules', 'apply', scheduleFile('{"name": "x"}')]), 1, 'must hold a JSON array');
    expectOneLineError(run(['schedules', 'apply', scheduleFile('[{')]), 1, 'is not valid JSON');
    expectOneLineError(run(['schedules', 'apply', `${database.url.slice(7)}.missing`]), 1, 'cannot read schedule file');
    expectOneLineError(run(['schedules', 'apply', scheduleFile([]), '--prune', 'drop']), 2, 'pause, delete');
    expect(stored()).toEqual(before);
  });
});
