import { type NewCronExecution, newCronExecutionRow, newId, type ScheduleRow } from '@orreryjs/core';
import { drizzle } from 'drizzle-orm/node-postgres';
import { describe, expect, it } from 'vitest';
import { flattenStatements, renderSqlSnapshot } from '../../../test/support/sql-snapshot.js';
import { reclaimForBackfill } from '../src/cron-store/backfill.js';
import {
  claimBufferedRow,
  countReleasedRun,
  selectBufferingSchedules,
  selectOldestBuffered,
} from '../src/cron-store/buffer.js';
import {
  advanceNextRunAt,
  selectActivePipelines,
  selectActiveSchedules,
  selectDueSchedules,
  selectLatestPipelines,
  selectTakenSlots,
  skipBufferedRows,
  skipClaimedRows,
  WALK_DUE_INDEX_IN_ORDER,
} from '../src/cron-store/claim.js';
import { relinkOccurrences } from '../src/cron-store/handoff.js';
import { prepareCronStore } from '../src/cron-store/index.js';
import { insertOccurrenceChunk } from '../src/cron-store/ledger.js';
import {
  deleteScheduleAtVersion,
  insertScheduleChunk,
  selectSchedules,
  selectStrandedSchedules,
  updateScheduleGroup,
  updateScheduleVersion,
} from '../src/cron-store/schedules.js';
import { lockSchedule } from '../src/cron-store/trigger.js';
import {
  admitSlots,
  countActive,
  countActiveWithHeads,
  insertSlots,
  lockGroups,
  selectGroupOccupancy,
  selectOldestActive,
  selectQueued,
  selectQueuedGroupNames,
  selectQueuedGroups,
  tryLockGroup,
} from '../src/execution-store/admission.js';
import {
  countStarts,
  deleteExpiredStarts,
  insertStarts,
  joinHerd,
  lockBucket,
  selectDatabaseTime,
  selectHeldLeases,
  selectNthStart,
} from '../src/execution-store/buckets.js';
import {
  cancelPipelineRow,
  cancelTasks,
  forgetQueuedSlots,
  pausePipelineRow,
  requeueRunningTasks,
  retryPipelineRow,
  retryTasks,
} from '../src/execution-store/control.js';
import { prepareExecutionStore } from '../src/execution-store/index.js';
import { deferTask } from '../src/execution-store/lease.js';
import {
  cancelMapInstances,
  countDownMapTask,
  countMapInstancesOf,
  deleteMapInstances,
  insertInstances,
  parkMapTask,
  selectMapInstancePage,
  selectMapInstances,
} from '../src/execution-store/maps.js';
import { countWork, selectPipelines } from '../src/execution-store/pipelines.js';
import { prepareRunnerStore } from '../src/runner-store/index.js';
import { tablesIn } from '../src/schema.js';
import type { PostgresDb, PostgresHandle } from '../src/transaction.js';
import { prepareWorkflowStore } from '../src/workflow-store/index.js';

// Statements are built, never run: drizzle's mock driver renders them without a server. The schema
// name is a stand-in: every statement names the storage's schema. Nothing here runs a raw statement on `$client`.
const db = drizzle.mock() as unknown as PostgresDb;
const tables = tablesIn('tenant');
const handle: PostgresHandle = { pool: undefined as never, db, tables, named: (name) => name };
const now = new Date('2026-01-02T03:04:05.678Z');
const id = newId();
const schedule = { id, version: 1 } as ScheduleRow;
const occurrence: NewCronExecution = {
  id,
  scheduleId: id,
  workflowName: 'w',
  context: {},
  scheduledTime: now,
  fireAt: now,
  claimedAt: now,
  claimedBy: 'r',
  status: 'claimed',
  source: 'backfill',
  missedCount: 0,
};
const page = { limit: 10, offset: 0 };
const rateLimited = {
  taskExecutionId: id,
  pipelineExecutionId: id,
  taskId: 't',
  attempt: 1,
  runnerId: 'r',
  bucket: 'b',
  limit: 1,
  periodMs: 1000,
  now,
};
const release = { now, runnerId: 'r', workflowNames: ['w'], limit: 10 };
const startMap = {
  taskExecutionId: id,
  pipelineExecutionId: id,
  taskId: 't',
  attempt: 1,
  runnerId: 'r',
  items: [1, 'a'],
  now,
};
const mapTally = {
  pipelineExecutionId: id,
  taskId: 't',
  completed: 1,
  failed: null,
  dependents: [],
  lastOrd: 0,
  now,
};

// The cron store's `handoff/insertPipelines` is the execution store's `pipelines/insertPipelines`, in execution-store.sql already.
const { insertPipelines: _insertPipelines, ...handoffStatements } = prepareCronStore(handle).handoff;

/** The statements each store sends: its prepared ones, then those built per call (one representative input each). */
const stores = {
  'cron-store': [
    ...flattenStatements({ ...prepareCronStore(handle), handoff: handoffStatements }),
    ...flattenStatements({
      schedules: {
        selectSchedules: selectSchedules(db, tables, { ...page, enabledOnly: true, workflowName: 'w' }),
        updateScheduleVersion: updateScheduleVersion(db, tables, id, 1, { enabled: false, updatedAt: now }),
        // Two rows: the columns they share are one value, the others (id, name) an array each.
        insertScheduleChunk: insertScheduleChunk(db, tables, [schedule, { ...schedule, id: newId(), name: 'n' }]),
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
        deleteScheduleAtVersion: deleteScheduleAtVersion(db, tables, [{ id, expectedVersion: 1 }]),
        selectStrandedSchedules: selectStrandedSchedules(db, tables, now, ['w'], 10),
      },
      claim: {
        // Constant text sent with the claim's BEGIN.
        walkDueIndexInOrder: { query: { sql: WALK_DUE_INDEX_IN_ORDER } },
        selectDueSchedules: selectDueSchedules(db, tables, {
          now,
          workflowNames: ['w'],
          limit: 10,
          plan: () => null,
        }),
        selectActiveSchedules: selectActiveSchedules(db, tables, [id]),
        selectActivePipelines: selectActivePipelines(db, tables, [id]),
        skipBufferedRows: skipBufferedRows(db, tables, [id]),
        selectTakenSlots: selectTakenSlots(db, tables, [schedule], now, now),
        advanceNextRunAt: advanceNextRunAt(db, tables, [{ schedule, nextRunAt: now, lastRunAt: now }], now),
        skipClaimedRows: skipClaimedRows(db, tables, [id]),
        selectLatestPipelines: selectLatestPipelines(db, tables, [id]),
      },
      buffer: {
        selectBufferingSchedules: selectBufferingSchedules(db, tables, release),
        selectOldestBuffered: selectOldestBuffered(db, tables, id),
        claimBufferedRow: claimBufferedRow(db, tables, id, release),
        countReleasedRun: countReleasedRun(db, tables, id, true, now),
      },
      handoff: { relinkOccurrences: relinkOccurrences(db, tables, new Map([[id, id]])) },
      backfill: { reclaimForBackfill: reclaimForBackfill(db, tables, [occurrence]) },
      ledger: { insertOccurrenceChunk: insertOccurrenceChunk(db, tables, [newCronExecutionRow(occurrence)]) },
      trigger: { lockSchedule: lockSchedule(db, tables, id) },
    }),
  ],
  'execution-store': [
    ...flattenStatements(prepareExecutionStore(handle)),
    ...flattenStatements({
      pipelines: {
        selectPipelines: selectPipelines(db, tables, { ...page, workflowName: 'w', status: 'running' }),
        countWork: countWork(db, tables, now),
      },
      admission: {
        lockGroups: lockGroups(db, tables, ['g']),
        tryLockGroup: tryLockGroup(db, tables, 'g'),
        selectQueuedGroupNames: selectQueuedGroupNames(db, tables),
        countActive: countActive(db, tables, ['g']),
        countActiveWithHeads: countActiveWithHeads(db, tables, ['g'], 8),
        selectQueued: selectQueued(db, tables, 'g', 0),
        admitSlots: admitSlots(db, tables, [id], now),
        selectOldestActive: selectOldestActive(db, tables, 'g'),
        insertSlots: insertSlots(db, tables, [
          { pipelineExecutionId: id, group: { group: 'g', limit: 1, onLimit: 'queue' }, priority: 0, queuedAt: now },
        ]),
        selectQueuedGroups: selectQueuedGroups(db, tables, [id]),
        selectGroupOccupancy: selectGroupOccupancy(db, tables, 'w'),
      },
      lease: {
        deferTask: deferTask(db, tables, { ...rateLimited, availableAt: now }),
      },
      buckets: {
        lockBucket: lockBucket(db, tables, ['b']),
        selectDatabaseTime: selectDatabaseTime(db),
        selectHeldLeases: selectHeldLeases(db, tables, [rateLimited]),
        deleteExpiredStarts: deleteExpiredStarts(db, tables, 'b', now),
        countStarts: countStarts(db, tables, 'b', now),
        selectNthStart: selectNthStart(db, tables, 'b', now, 1),
        insertStarts: insertStarts(db, tables, 'b', now, 1000, 2),
        joinHerd: joinHerd(db, tables, 'b', now, 3),
      },
      maps: {
        parkMapTask: parkMapTask(db, tables, { ...startMap }),
        insertInstances: insertInstances(db, tables, startMap, { workflowName: 'w', position: 0, priority: 0 }),
        countDownMapTask: countDownMapTask(db, tables, mapTally),
        selectMapInstances: selectMapInstances(db, tables, id, 't'),
        selectMapInstancePage: selectMapInstancePage(db, tables, id, 't', { limit: 100, offset: 0 }),
        cancelMapInstances: cancelMapInstances(db, tables, mapTally),
        countMapInstancesOf: countMapInstancesOf(db, tables, id),
        deleteMapInstances: deleteMapInstances(db, tables, id, [id]),
      },
      control: {
        cancelPipelineRow: cancelPipelineRow(db, tables, id, now),
        cancelTasks: cancelTasks(db, tables, id, now),
        forgetQueuedSlots: forgetQueuedSlots(db, tables, id),
        pausePipelineRow: pausePipelineRow(db, tables, id, null, now),
        requeueRunningTasks: requeueRunningTasks(db, tables, id, now),
        retryPipelineRow: retryPipelineRow(db, tables, id, 1, now),
        retryTasks: retryTasks(db, tables, id, [{ id, pendingDeps: 0 }], now, false),
      },
    }),
  ],
  'runner-store': flattenStatements({ index: prepareRunnerStore(handle) }),
  'workflow-store': flattenStatements({ index: prepareWorkflowStore(handle) }),
};

describe('SQL snapshot (Postgres)', () => {
  for (const [store, statements] of Object.entries(stores)) {
    it(`sends the SQL committed in test/sql/${store}.sql`, async () => {
      expect(statements.length).toBeGreaterThan(0);
      await expect(renderSqlSnapshot(statements)).toMatchFileSnapshot(`./sql/${store}.sql`);
    });
  }
});
