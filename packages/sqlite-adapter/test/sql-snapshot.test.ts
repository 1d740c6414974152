import { newId, type ScheduleRow } from '@orreryjs/core';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { flattenStatements, renderSqlSnapshot } from '../../../test/support/sql-snapshot.js';
import { prepareCronStore } from '../src/cron-store/index.js';
import {
  selectSchedules,
  selectStrandedSchedules,
  updateScheduleGroup,
  updateScheduleVersion,
} from '../src/cron-store/schedules.js';
import { prepareExecutionStore } from '../src/execution-store/index.js';
import { countWork, selectPipelines } from '../src/execution-store/pipelines.js';
import { applyMigrations } from '../src/migrate.js';
import { prepareRunnerStore } from '../src/runner-store/index.js';
import * as schema from '../src/schema.js';
import { createHandle } from '../src/transaction.js';
import { prepareWorkflowStore } from '../src/workflow-store/index.js';

// SQLite prepares a statement against the tables it names, so the statements are prepared on a migrated in-memory database.
const client = new Database(':memory:');
applyMigrations(client);
const handle = createHandle(client, drizzle({ client, schema }), schema.tables);
const { db, tables } = handle;
const now = new Date('2026-01-02T03:04:05.678Z');
const id = newId();
const page = { limit: 10, offset: 0 };
const patch: Partial<ScheduleRow> = { enabled: false, updatedAt: now };

// The cron store's `control`, `pipelines` and `admission` statements are the execution store's, in execution-store.sql already.
const { control: _control, pipelines: _pipelines, admission: _admission, ...cronStatements } = prepareCronStore(handle);

/** The statements each store sends: its prepared ones, then those built per call (one representative input each). */
const stores = {
  'cron-store': [
    ...flattenStatements(cronStatements),
    ...flattenStatements({
      schedules: {
        selectSchedules: selectSchedules(db, tables, { ...page, enabledOnly: true, workflowName: 'w' }),
        updateScheduleVersion: updateScheduleVersion(db, tables, id, 1, patch),
        // Two rows: a value both share, and one that differs by row.
        updateScheduleGroup: updateScheduleGroup(
          db,
          tables,
          ['enabled', 'nextRunAt'],
          [
            { id, expectedVersion: 1, patch: { enabled: true, nextRunAt: now } },
            { id: newId(), expectedVersion: 1, patch: { enabled: true, nextRunAt: null } },
          ],
        ),
        selectStrandedSchedules: selectStrandedSchedules(db, tables, now, ['w'], 10),
      },
    }),
  ],
  'execution-store': [
    ...flattenStatements(prepareExecutionStore(handle)),
    ...flattenStatements({
      pipelines: {
        selectPipelines: selectPipelines(db, tables, { ...page, workflowName: 'w', status: 'running' }),
        countWork: countWork(db, tables, now),
      },
    }),
  ],
  'runner-store': flattenStatements({ index: prepareRunnerStore(handle) }),
  'workflow-store': flattenStatements({ index: prepareWorkflowStore(handle) }),
};

afterAll(() => client.close());

describe('SQL snapshot (SQLite)', () => {
  for (const [store, statements] of Object.entries(stores)) {
    it(`sends the SQL committed in test/sql/${store}.sql`, async () => {
      expect(statements.length).toBeGreaterThan(0);
      await expect(renderSqlSnapshot(statements)).toMatchFileSnapshot(`./sql/${store}.sql`);
    });
  }
});
