import {
  type NewCronExecution,
  newId,
  occurrenceId,
  ScheduleConflictError,
  type ScheduleRow,
  type Storage,
} from '@orreryjs/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStorage } from '../src/index.js';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
let storage: Storage;

beforeEach(async () => {
  storage = await openSqliteStorage({ filename: ':memory:' });
});
afterEach(() => storage.close());

function schedule(overrides: Partial<ScheduleRow> = {}): ScheduleRow {
  return {
    id: newId(),
    name: null,
    workflowName: 'wf',
    cronExpression: '* * * * *',
    timezone: 'UTC',
    enabled: true,
    context: {},
    catchupPolicy: 'run_once',
    overlapPolicy: 'allow',
    jitterMs: 0,
    pauseOnFailure: false,
    enabledAt: T0,
    maxRuns: null,
    runCount: 0,
    dst: null,
    note: null,
    startAt: null,
    endAt: null,
    nextRunAt: T0,
    lastRunAt: null,
    version: 1,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  };
}

function occurrence(
  row: ScheduleRow,
  scheduledTime: Date,
  overrides: Partial<NewCronExecution> = {},
): NewCronExecution {
  return {
    id: occurrenceId(row.id, scheduledTime),
    scheduleId: row.id,
    workflowName: row.workflowName,
    context: row.context,
    scheduledTime,
    fireAt: scheduledTime,
    claimedAt: scheduledTime,
    claimedBy: 'r1',
    status: 'claimed',
    source: 'schedule',
    missedCount: 0,
    ...overrides,
  };
}

describe('SqliteCronStore', () => {
  it('returns the schedule holding a name instead of inserting a second one', async () => {
    const first = await storage.cron.insertSchedule(schedule({ name: 'nightly' }));
    const again = await storage.cron.insertSchedule(schedule({ name: 'nightly', cronExpression: '0 0 * * *' }));
    expect(again).toEqual({ schedule: first.schedule, created: false });
  });

  it('updates by compare-and-set on version and refuses a taken name', async () => {
    const { schedule: row } = await storage.cron.insertSchedule(schedule({ name: 'a' }));
    await storage.cron.insertSchedule(schedule({ name: 'b' }));
    const updated = await storage.cron.updateSchedule(row.id, 1, { enabled: false, updatedAt: at(1) });
    expect(updated).toMatchObject({ enabled: false, version: 2, updatedAt: at(1) });
    expect(await storage.cron.updateSchedule(row.id, 1, { enabled: true })).toBeNull();
    await expect(storage.cron.updateSchedule(row.id, 2, { name: 'b' })).rejects.toThrow(ScheduleConflictError);
  });

  it('claims due schedules once: inserts the planned rows, advances next_run_at and bumps the version', async () => {
    const { schedule: row } = await storage.cron.insertSchedule(schedule({ overlapPolicy: 'skip' }));
    const seen: boolean[] = [];
    const request = {
      now: at(10),
      workflowNames: ['wf'],
      limit: 10,
      plan: (due: ScheduleRow, state: { hasActiveOccurrence: boolean }) => {
        seen.push(state.hasActiveOccurrence);
        return { occurrences: [occurrence(due, due.nextRunAt!)], nextRunAt: at(60_000), lastRunAt: due.nextRunAt };
      },
    };
    const claimed = await storage.cron.claimDueSchedules(request);
    expect(claimed).toMatchObject([{ id: occurrenceId(row.id, T0), status: 'claimed', recoveryAttempts: 0 }]);
    expect(await storage.cron.claimDueSchedules(request)).toEqual([]);
    expect(await storage.cron.getSchedule(row.id)).toMatchObject({ nextRunAt: at(60_000), lastRunAt: T0, version: 2 });
    await storage.cron.updateSchedule(row.id, 2, { nextRunAt: T0 });
    await storage.cron.claimDueSchedules(request);
    expect(seen).toEqual([false, true]);
  });

  it('sees an overlap while a linked pipeline is unfinished, and none once it is cancelled', async () => {
    const { schedule: row } = await storage.cron.insertSchedule(schedule({ overlapPolicy: 'skip' }));
    const [first] = await storage.cron.insertOccurrences([occurrence(row, T0)]).then((r) => r.claimed);
    const pipelineId = newId();
    await storage.executions.createPipeline({
      id: pipelineId,
      workflowName: 'wf',
      workflowVersion: 'v1',
      input: {},
      idempotencyKey: first!.id,
      scheduledTime: T0,
      now: T0,
      tasks: [{ id: newId(), taskId: 'a', position: 0, pendingDeps: 0 }],
    });
    await storage.cron.linkOccurrence(first!.id, pipelineId, at(1));
    const states: boolean[] = [];
    const claimDue = () =>
      storage.cron.claimDueSchedules({
        now: at(10),
        workflowNames: ['wf'],
        limit: 10,
        plan: (_due, state) => {
          states.push(state.hasActiveOccurrence);
          return null;
        },
      });
    await claimDue();
    await storage.executions.cancelPipeline(pipelineId, at(2));
    await claimDue();
    expect(states).toEqual([true, false]);
  });

  it('reclaims a missed slot for backfill and counts slots that already ran as existing', async () => {
    const row = schedule();
    await storage.cron.insertOccurrences([
      occurrence(row, T0, { status: 'missed', missedCount: 3 }),
      occurrence(row, at(60_000)),
    ]);
    const backfill = (time: Date) => occurrence(row, time, { source: 'backfill', claimedAt: at(1e6) });
    const result = await storage.cron.insertOccurrences([backfill(T0), backfill(at(60_000)), backfill(at(120_000))]);
    expect(result.existing).toBe(1);
    expect(result.claimed.map((r) => [r.scheduledTime, r.source, r.missedCount])).toEqual([
      [T0, 'backfill', 1],
      [at(120_000), 'backfill', 0],
    ]);
  });

  it('leases a lost row to one recoverer, fences finishRecovery and keeps the counts', async () => {
    const row = schedule();
    await storage.cron.insertOccurrences([occurrence(row, T0)]);
    const request = { now: at(120_000), lostBefore: at(60_000), workflowNames: ['wf'], limit: 10, leaseMs: 30_000 };
    const [lost] = await storage.cron.claimLostOccurrences({ ...request, runnerId: 'r1' });
    expect(lost).toMatchObject({ row: { recoveryAttempts: 1, recoveryLeaseOwner: 'r1' }, schedule: null });
    expect(await storage.cron.claimLostOccurrences({ ...request, runnerId: 'r2' })).toEqual([]);
    const id = lost!.row.id;
    const pipelineId = newId();
    expect(
      await storage.cron.finishRecovery(id, 'r2', { status: 'linked', pipelineExecutionId: pipelineId }, at(1)),
    ).toBe(false);
    expect(
      await storage.cron.finishRecovery(id, 'r1', { status: 'linked', pipelineExecutionId: pipelineId }, at(1)),
    ).toBe(true);
    expect(await storage.cron.getOccurrence(id)).toMatchObject({
      status: 'handed_off',
      recovered: true,
      pipelineExecutionId: pipelineId,
      recoveryLeaseOwner: null,
    });
    expect(await storage.cron.recoveryCounts()).toEqual({
      totalRecoveryAttempts: 1,
      successfulRecoveries: 1,
      abandonedRecoveries: 0,
    });
  });

  it('computes ledger stats with the p99 delay at rank ceil(0.99 n) - 1', async () => {
    const row = schedule();
    const times = [0, 60_000, 120_000];
    await storage.cron.insertOccurrences(times.map((ms) => occurrence(row, at(ms))));
    for (const [i, ms] of times.entries()) {
      await storage.cron.linkOccurrence(occurrenceId(row.id, at(ms)), newId(), at(ms + (i + 1) * 100));
    }
    const stats = await storage.cron.occurrenceStats(T0, at(1e9));
    expect(stats).toEqual({
      total: 3,
      handedOff: 3,
      lost: 0,
      skipped: 0,
      missed: 0,
      abandoned: 0,
      meanDelayMs: 200,
      p99DelayMs: 300,
    });
  });
});
