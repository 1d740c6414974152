import { afterAll, describe, expect, it } from 'vitest';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import { expectOneLineError, orrery, orreryJson } from './support/cli.js';

const file = tempSqliteFile();
const url = `sqlite:${file.filename}`;
afterAll(() => file.remove());

describe('orrery migrate', () => {
  it('refuses management commands on a database that was never migrated, pointing at migrate', () => {
    expectOneLineError(orrery(['schedules', 'list', '--database', url]), 1, 'orrery migrate');
  });

  it('applies the migrations of a fresh database and says so in a table', () => {
    const run = orrery(['migrate', '--database', url]);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(url);
    expect(run.stdout).toContain('migrated: pending migrations applied');
  });

  it('reports an up-to-date database as JSON, reading the URL from ORRERY_DATABASE_URL', () => {
    expect(orreryJson(['migrate'], { env: { ORRERY_DATABASE_URL: url } })).toEqual({
      database: url,
      schema: null,
      state: 'up-to-date',
    });
    expect(orreryJson(['executions', 'list', '--database', url])).toEqual([]);
  });

  it('refuses a database URL with an unknown scheme in one line, exit code 1', () => {
    expectOneLineError(orrery(['migrate', '--database', 'mysql://localhost/orrery']), 1, 'unknown scheme');
  });
});
