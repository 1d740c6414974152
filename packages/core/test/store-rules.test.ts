import { describe, expect, it } from 'vitest';
import {
  ACTIVE_PIPELINE_STATUSES,
  inKeyLockOrder,
  newCronExecutionRow,
  newTaskStatus,
  registeredTaskKeys,
  TERMINAL_PIPELINE_STATUSES,
  TERMINAL_TASK_STATUSES,
  taskOutcomeColumns,
  UNFINISHED_PIPELINE_STATUSES,
} from '../src/index.js';

const now = new Date('2026-01-02T03:04:05.678Z');

describe('store rules', () => {
  it('writes each outcome as its status, output, error, failed-attempt count and times', () => {
    expect(taskOutcomeColumns({ status: 'completed', output: { set: { a: 1 }, deleted: [] } }, now)).toEqual({
      status: 'completed',
      output: { set: { a: 1 }, deleted: [] },
      error: null,
      failed: 0,
      availableAt: null,
      completedAt: now,
      attemptOutcome: null,
    });
    expect(taskOutcomeColumns({ status: 'failed', error: 'boom' }, now)).toMatchObject({
      status: 'failed',
      error: 'boom',
      failed: 1,
      completedAt: now,
      attemptOutcome: 'failed',
    });
    expect(taskOutcomeColumns({ status: 'failed', error: 'slow', timedOut: true }, now)).toMatchObject({
      attemptOutcome: 'timed_out',
    });
    // A claim that gave up without running counts as failed but records no attempt.
    expect(taskOutcomeColumns({ status: 'failed', error: 'lease expired', ran: false }, now)).toMatchObject({
      failed: 1,
      attemptOutcome: null,
    });
    expect(taskOutcomeColumns({ status: 'skipped', reason: 'upstream failed' }, now)).toMatchObject({
      status: 'skipped',
      error: 'upstream failed',
      failed: 0,
      attemptOutcome: null,
    });
    const later = new Date(now.getTime() + 1000);
    expect(taskOutcomeColumns({ status: 'retry', error: 'again', availableAt: later }, now)).toEqual({
      status: 'ready',
      output: null,
      error: 'again',
      failed: 1,
      availableAt: later,
      completedAt: null,
      attemptOutcome: 'failed',
    });
  });

  it('starts a task ready only when it depends on nothing, and a ledger row with empty recovery fields', () => {
    expect([newTaskStatus(0), newTaskStatus(2)]).toEqual(['ready', 'not_started']);
    const row = newCronExecutionRow({
      id: 'x',
      scheduleId: 's',
      workflowName: 'w',
      context: {},
      scheduledTime: now,
      fireAt: now,
      claimedAt: now,
      claimedBy: 'r',
      status: 'claimed',
      source: 'schedule',
      missedCount: 0,
    });
    expect(row).toMatchObject({
      pipelineExecutionId: null,
      recoveryAttempts: 0,
      recovered: false,
      abandonReason: null,
    });
  });

  it('orders a write by idempotency key, keeping the first asked of a repeated key first and keyless ones last', () => {
    const asked = [
      { name: 'b1', idempotencyKey: 'b' },
      { name: 'none1', idempotencyKey: null },
      { name: 'a', idempotencyKey: 'a' },
      { name: 'b2', idempotencyKey: 'b' },
      { name: 'none2', idempotencyKey: null },
      { name: 'B', idempotencyKey: 'B' },
    ];
    expect(inKeyLockOrder(asked).map((x) => x.name)).toEqual(['B', 'a', 'b1', 'b2', 'none1', 'none2']);
    expect(asked.map((x) => x.name)).toEqual(['b1', 'none1', 'a', 'b2', 'none2', 'B']);
  });

  it('keys registered tasks by workflow and task id, and keeps the status sets apart', () => {
    expect(registeredTaskKeys([{ workflowName: 'w', taskIds: ['a', 'b'] }])).toEqual(['w\u001fa', 'w\u001fb']);
    // Made once per registered list (a runner claims with one until it registers more), anew for another.
    const registered = [{ workflowName: 'w', taskIds: ['a'] }];
    expect(registeredTaskKeys(registered)).toBe(registeredTaskKeys(registered));
    expect(registeredTaskKeys([...registered, { workflowName: 'v', taskIds: ['b'] }])).toEqual([
      'w\u001fa',
      'v\u001fb',
    ]);
    expect(UNFINISHED_PIPELINE_STATUSES).toEqual([...ACTIVE_PIPELINE_STATUSES, 'paused']);
    expect(
      TERMINAL_PIPELINE_STATUSES.filter((s) => (UNFINISHED_PIPELINE_STATUSES as readonly string[]).includes(s)),
    ).toEqual([]);
    expect(TERMINAL_TASK_STATUSES).toEqual(['completed', 'failed', 'skipped', 'cancelled']);
  });
});
