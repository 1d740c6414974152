import type { CronSchedule } from '@orreryjs/runner';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../test/support/postgres.js';
import { expectOneLineError, orrery, orreryJson } from './support/cli.js';
import { registerFixtureWorkflows } from './support/database.js';

const schema = freshSchemaName();
afterAll(() => dropSchema(schema));
const env = () => ({ ORRERY_DATABASE_URL: postgresUrl(), ORRERY_SCHEMA: schema });

describe('orrery against PostgreSQL', () => {
  it('migrates a fresh schema, then finds it up to date', () => {
    const first = orrery(['migrate'], { env: env() });
    expect(first.status).toBe(0);
    expect(first.stdout).toContain(schema);
    expect(first.stdout).toContain('migrated');
    expect(orreryJson(['migrate'], { env: env() })).toMatchObject({ schema, state: 'up-to-date' });
  });

  it('adds, lists, triggers and deletes a schedule of a workflow a runner registered, without its code', async () => {
    await registerFixtureWorkflows(postgresUrl(), schema);
    const added = orreryJson<CronSchedule>(['schedules', 'add', 'report', '*/15 * * * *', '--name', 'quarter'], {
      env: env(),
    });
    expect(added).toMatchObject({ name: 'quarter', enabled: true });
    expect(added.cronExpression).toMatch(/^(0 )?\*\/15 \* \* \* \*$/);
    expect(orrery(['schedules', 'list'], { env: env() }).stdout).toContain('quarter');
    const { executionId } = orreryJson<{ executionId: string }>(['schedules', 'trigger', 'quarter'], {
      env: env(),
    });
    expect(orreryJson<Array<{ executionId: string; status: string }>>(['executions', 'list'], { env: env() })).toEqual([
      expect.objectContaining({ executionId, status: 'pending' }),
    ]);
    expect(orrery(['schedules', 'delete', 'quarter'], { env: env() }).status).toBe(0);
    expect(orreryJson(['schedules', 'list'], { env: env() })).toEqual([]);
  });

  it('stores and clears overlap, pause on failure, run limit, DST and note, and refuses a bad value', () => {
    const args = ['schedules', 'add', 'report', '30 2 * * *', '--name', 'guarded', '--tz', 'America/New_York'];
    const added = orreryJson<CronSchedule>(
      [...args, '--overlap', 'cancel_other', '--pause-on-failure', '--max-runs', '3', '--dst', 'repeated=both'],
      { env: env() },
    );
    expect(added).toMatchObject({ overlapPolicy: 'cancel_other', pauseOnFailure: true, maxRuns: 3, runCount: 0 });
    const show = orrery(['schedules', 'show', 'guarded'], { env: env() }).stdout;
    expect(show).toMatch(/DST\s+│ repeated=both,gap=shift/);
    expect(show).toMatch(/Runs\s+│ 0 of at most 3/);
    const updated = orreryJson<CronSchedule>(
      [
        'schedules',
        'update',
        'guarded',
        '--overlap',
        'buffer_all',
        '--no-max-runs',
        '--no-dst',
        '--note',
        'on call: ops',
      ],
      { env: env() },
    );
    expect(updated).toMatchObject({ overlapPolicy: 'buffer_all', maxRuns: null, dst: null, note: 'on call: ops' });
    expectOneLineError(
      orrery(['schedules', 'update', 'guarded', '--overlap', 'later'], { env: env() }),
      2,
      'buffer_one, buffer_all, cancel_other',
    );
    expect(orreryJson<CronSchedule>(['schedules', 'show', 'guarded'], { env: env() })).toEqual(updated);
  });

  it('names the database and schema read when a schedule is not found, with the password masked', () => {
    const url = new URL(postgresUrl());
    url.password = 'hunter2';
    const masked = `${url.protocol}//${url.username}:***@${url.host}${url.pathname}`;
    const line = expectOneLineError(
      orrery(['schedules', 'show', 'absent'], { env: { ...env(), ORRERY_DATABASE_URL: url.href } }),
      1,
      `No cron schedule has name "absent" in ${masked} (schema ${schema});`,
    );
    expect(line).not.toContain('hunter2');
  });

  it('refuses an invalid schema name in one line', () => {
    expectOneLineError(orrery(['schedules', 'list', '--schema', 'Bad-Name'], { env: env() }), 1, 'Bad-Name');
  });
});
