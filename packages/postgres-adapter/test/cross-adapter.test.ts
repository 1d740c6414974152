import { type JsonObject, newId, occurrenceId, type ScheduleRow, type Storage } from '@orreryjs/core';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../test/support/postgres.js';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import { openPostgresStorage } from '../src/index.js';

/** JSON with escapes, unicode, nesting, number forms and the strings jsonb cannot hold natively. */
const AWKWARD: JsonObject = {
  text: 'héllo — ✓ 日本語 🚀 👩‍👩‍👧‍👦',
  escapes: 'quote " backslash \\ newline \n tab \t',
  sqlish: "'); DROP TABLE cron_schedules; --",
  nested: { deep: [1, 'two', { three: 3 }, [4, []]], empty: {} },
  numbers: [0, -1, 1.5, 1e-7, 1e21, 0.1 + 0.2, Number.MAX_SAFE_INTEGER],
  flags: [true, false, null],
  nul: 'a\u0000b',
  lone: 'x\ud800y',
  '': 'empty key',
};

const INSTANTS = [
  new Date('1970-01-01T00:00:00.000Z'),
  new Date('1969-12-31T23:59:59.999Z'),
  new Date('2038-01-19T03:14:08.001Z'),
  new Date('2999-12-31T23:59:59.999Z'),
  new Date(Date.UTC(2026, 2, 8, 7, 0, 0, 123) + 0.9),
];

const IDS = ['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', newId()];

let sqlite: Storage;
let postgres: Storage;
let removeSqlite: () => void;
const schema = freshSchemaName();
beforeAll(async () => {
  const file = tempSqliteFile();
  removeSqlite = file.remove;
  sqlite = await openSqliteStorage({ filename: file.filename });
  postgres = await openPostgresStorage({ connectionString: postgresUrl(), schema });
});
afterAll(async () => {
  await sqlite.close();
  removeSqlite();
  await postgres.close();
  await dropSchema(schema);
});

function schedule(instant: Date, overrides: Partial<ScheduleRow> = {}): ScheduleRow {
  return {
    id: newId(),
    name: `☀️ ${newId().slice(0, 8)}`,
    workflowName: 'wf',
    cronExpression: '0 30 2 * * MON-FRI',
    timezone: 'America/New_York',
    enabled: false,
    context: AWKWARD,
    catchupPolicy: 'run_all',
    overlapPolicy: 'skip',
    jitterMs: 1500,
    pauseOnFailure: false,
    enabledAt: instant,
    maxRuns: null,
    runCount: 0,
    dst: null,
    note: null,
    startAt: instant,
    endAt: null,
    nextRunAt: instant,
    lastRunAt: instant,
    version: 7,
    createdAt: instant,
    updatedAt: instant,
    ...overrides,
  };
}

/**
 * The same units of work on one storage: a pipeline whose task completes with an awkward output,
 * schedules at the edge instants, a ledger row linked and recovered, a runner; returns every row
 * read back.
 */
async function writeAndRead(storage: Storage, schedules: ScheduleRow[], pipelineId: string) {
  const taskIds = [IDS[1]!, IDS[2]!];
  await storage.executions.createPipeline({
    id: pipelineId,
    workflowName: 'wf',
    workflowVersion: 'v1',
    input: AWKWARD,
    idempotencyKey: `key ✓ ${pipelineId}`,
    scheduledTime: INSTANTS[4]!,
    now: INSTANTS[4]!,
    tasks: [
      { id: taskIds[0]!, taskId: 'a', position: 0, pendingDeps: 0 },
      { id: taskIds[1]!, taskId: 'b', position: 1, pendingDeps: 1 },
    ],
  });
  const registered = [{ workflowName: 'wf', taskIds: ['a', 'b'] }];
  const [claimed] = await storage.executions.claimTasks({
    runnerId: 'runner ✓',
    registered,
    limit: 1,
    leaseMs: 1000,
    now: INSTANTS[4]!,
  });
  await storage.executions.finishTasks([
    {
      runnerId: 'runner ✓',
      taskExecutionId: claimed!.task.id,
      pipelineExecutionId: pipelineId,
      taskId: claimed!.task.taskId,
      attempt: 1,
      outcome: { status: 'completed', output: { set: AWKWARD, deleted: ['gone', ''] } },
      dependents: ['b'],
      now: INSTANTS[3]!,
    },
  ]);
  for (const row of schedules) await storage.cron.insertSchedule(row);
  const scheduleId = schedules[0]!.id;
  const occurrence = {
    id: occurrenceId(scheduleId, INSTANTS[0]!),
    scheduleId,
    workflowName: 'wf',
    context: AWKWARD,
    scheduledTime: INSTANTS[0]!,
    fireAt: INSTANTS[1]!,
    claimedAt: INSTANTS[2]!,
    claimedBy: 'runner ✓',
    status: 'claimed' as const,
    source: 'catchup' as const,
    missedCount: 0,
  };
  await storage.cron.insertOccurrences([occurrence]);
  const [lost] = await storage.cron.claimLostOccurrences({
    now: INSTANTS[3]!,
    lostBefore: INSTANTS[3]!,
    workflowNames: ['wf'],
    limit: 10,
    runnerId: 'recoverer',
    leaseMs: 5,
  });
  await storage.cron.finishRecovery(
    lost!.row.id,
    'recoverer',
    { status: 'linked', pipelineExecutionId: pipelineId },
    INSTANTS[3]!,
  );
  await storage.runners.heartbeat({
    id: 'host-1-42',
    hostname: 'höst',
    pid: 42,
    workflows: ['wf', 'ünïcode'],
    startedAt: INSTANTS[1]!,
    heartbeatAt: INSTANTS[3]!,
  });
  return {
    pipeline: await storage.executions.getPipeline(pipelineId),
    tasks: await storage.executions.listTasks(pipelineId),
    schedules: await Promise.all(schedules.map((row) => storage.cron.getSchedule(row.id))),
    occurrence: await storage.cron.getOccurrence(occurrence.id),
    lost,
    runners: await storage.runners.listRunners(),
  };
}

describe('SQLite and Postgres agree on values', () => {
  it('reads back every column type equal through both adapters after the same units of work', async () => {
    const schedules = INSTANTS.map((instant, i) => schedule(instant, i === 1 ? { name: null, enabled: true } : {}));
    const pipelineId = IDS[0]!;
    const fromSqlite = await writeAndRead(sqlite, schedules, pipelineId);
    const fromPostgres = await writeAndRead(postgres, schedules, pipelineId);
    expect(fromPostgres).toEqual(fromSqlite);
    expect(fromPostgres.pipeline!.input).toEqual(AWKWARD);
    expect(fromPostgres.tasks[0]!.output).toEqual({ set: AWKWARD, deleted: ['gone', ''] });
    expect(fromPostgres.schedules[4]!.nextRunAt!.getTime()).toBe(Date.UTC(2026, 2, 8, 7, 0, 0, 123));
  });

  it('reads a row written through SQLite back equal through Postgres when written there as read', async () => {
    const row = schedule(INSTANTS[2]!, { context: { ...AWKWARD, more: [AWKWARD] } });
    await sqlite.cron.insertSchedule(row);
    const fromSqlite = (await sqlite.cron.getSchedule(row.id))!;
    await postgres.cron.insertSchedule(fromSqlite);
    expect(await postgres.cron.getSchedule(row.id)).toEqual(fromSqlite);
    expect(fromSqlite).toEqual(row);
  });
});
