import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectOneLineError, orrery } from './support/cli.js';
import { migratedSqliteDatabase, registerFixtureWorkflows } from './support/database.js';

const database = migratedSqliteDatabase();
afterAll(() => database.remove());
const env = { ORRERY_DATABASE_URL: database.url };
const run = (args: string[]) => orrery(args, { env });
beforeAll(() => registerFixtureWorkflows(database.url));

/** The one JSON document a failed `--json` run wrote on stderr. */
function jsonError(stderr: string): { error: { code: string; message: string } } {
  const lines = stderr.split('\n').filter((line) => line.trim() !== '');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as { error: { code: string; message: string } };
}

describe('CLI errors', () => {
  it('advise commands, not library calls, for an unknown schedule', () => {
    const line = expectOneLineError(run(['schedules', 'show', 'nope']), 1, 'orrery schedules list');
    expect(line).not.toContain('listCronSchedules()');
  });

  it('advise --on-conflict update, not { onConflict }, for a taken name', () => {
    expect(run(['schedules', 'add', 'report', '0 2 * * *', '--name', 'taken']).status).toBe(0);
    const line = expectOneLineError(
      run(['schedules', 'add', 'report', '0 3 * * *', '--name', 'taken']),
      1,
      '--on-conflict update',
    );
    expect(line).not.toContain('onConflict:');
    expect(line).toContain('it differs in cronExpression');
  });

  it('advise orrery executions list for an unknown execution id', () => {
    const line = expectOneLineError(run(['executions', 'show', 'nope']), 1, 'orrery executions list');
    expect(line).not.toContain('executeAsync()');
  });

  it('are one JSON document on stderr with --json, with the error code and exit code 1', () => {
    const failed = run(['schedules', 'show', 'nope', '--json']);
    expect(failed.status).toBe(1);
    expect(failed.stdout).toBe('');
    expect(jsonError(failed.stderr)).toEqual({
      error: { code: 'SCHEDULE_NOT_FOUND', message: expect.stringContaining('orrery schedules list') },
    });
  });

  it('are JSON with --json for usage errors too, code USAGE and exit code 2', () => {
    const failed = run(['executions', 'list', '--limit', 'zero', '--json']);
    expect(failed.status).toBe(2);
    expect(jsonError(failed.stderr)).toEqual({
      error: { code: 'USAGE', message: expect.stringContaining('--limit') },
    });
  });
});
