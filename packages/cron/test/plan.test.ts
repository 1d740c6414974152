import { type ScheduleRow, silentLogger } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { jitterDelayMs, manualPlan, planSchedule, SLOT_SCAN_LIMIT, type TickBudget } from '../src/plan.js';
import { CRON_DEFAULTS } from '../src/settings.js';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const DAY = 86_400_000;

function schedule(overrides: Partial<ScheduleRow> = {}): ScheduleRow {
  return {
    id: '6f1f5a8e-1111-4a5b-9e8f-2d7c6b5a4e3f',
    name: 'n',
    workflowName: 'wf',
    cronExpression: '* * * * * *',
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
    nextRunAt: at(1000),
    lastRunAt: null,
    version: 1,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  };
}

const context = (now: Date) => ({ now, runnerId: 'r', settings: CRON_DEFAULTS, logger: silentLogger });
const roomy = (): TickBudget => ({ rows: 1000, slots: 1_000_000 });

describe('planSchedule', () => {
  it('leaves slots that already hold a ledger row out of a missed summary', async () => {
    const now = at(10_500);
    const row = schedule({ catchupPolicy: 'skip', cronExpression: '* * * * * *', nextRunAt: at(1000) });
    const lenient = { ...context(now), settings: { ...CRON_DEFAULTS, misfireThresholdMs: 2000 } };
    const state = { hasActiveOccurrence: false, takenSlots: [at(1000), at(3000)] };
    const plan = planSchedule(row, state, lenient, roomy())!;
    const missed = plan.occurrences.filter((occurrence) => occurrence.status === 'missed');
    // Slots 1..8 s are missed (before now − 2 s); 1 s and 3 s already hold rows.
    expect(missed.map((occurrence) => [occurrence.scheduledTime, occurrence.missedCount])).toEqual([[at(2000), 6]]);
    const allTaken = planSchedule(
      row,
      { hasActiveOccurrence: false, takenSlots: Array.from({ length: 8 }, (_, i) => at(1000 * (i + 1))) },
      lenient,
      roomy(),
    )!;
    expect(allTaken.occurrences.filter((occurrence) => occurrence.status === 'missed')).toEqual([]);
  });

  it('summarises a backlog longer than one scan in missed rows and runs the latest slot once it is reached', async () => {
    const now = at(2 * DAY);
    const first = planSchedule(schedule(), { hasActiveOccurrence: false }, context(now), roomy())!;
    expect(first.occurrences).toEqual([
      expect.objectContaining({ status: 'missed', missedCount: SLOT_SCAN_LIMIT, scheduledTime: at(1000) }),
    ]);
    expect(first.nextRunAt).toEqual(at(1000 + SLOT_SCAN_LIMIT * 1000));
    let row = schedule({ nextRunAt: first.nextRunAt });
    let missed = SLOT_SCAN_LIMIT;
    let runs: Date[] = [];
    for (let pass = 0; pass < 5 && runs.length === 0; pass += 1) {
      const plan = planSchedule(row, { hasActiveOccurrence: false }, context(now), roomy())!;
      missed += plan.occurrences.filter((o) => o.status === 'missed').reduce((sum, o) => sum + o.missedCount, 0);
      runs = plan.occurrences.filter((o) => o.status === 'claimed').map((o) => o.scheduledTime);
      row = schedule({ nextRunAt: plan.nextRunAt });
    }
    // Every second of two days: the last 61 (60 s threshold, inclusive) are on time, the one before is the catch-up.
    expect(runs[0]).toEqual(at(2 * DAY - 61_000));
    expect(runs).toHaveLength(62);
    expect(missed + runs.length).toBe((2 * DAY) / 1000);
  });

  it('returns null when the tick budget is spent, leaving the schedule due', () => {
    const budget = { rows: 0, slots: 100 };
    expect(planSchedule(schedule(), { hasActiveOccurrence: false }, context(at(10_000)), budget)).toBeNull();
  });

  it('stops at the row budget and resumes from the first undecided slot', () => {
    const budget = { rows: 3, slots: 1000 };
    const plan = planSchedule(schedule(), { hasActiveOccurrence: false }, context(at(10_000)), budget)!;
    expect(plan.occurrences.map((o) => o.scheduledTime)).toEqual([at(1000), at(2000), at(3000)]);
    expect(plan.nextRunAt).toEqual(at(4000));
    expect(budget.rows).toBe(0);
  });

  it('skips every slot of a tick while an earlier occurrence is active', () => {
    const plan = planSchedule(
      schedule({ overlapPolicy: 'skip' }),
      { hasActiveOccurrence: true },
      context(at(3000)),
      roomy(),
    )!;
    expect(plan.occurrences.map((o) => o.status)).toEqual(['skipped', 'skipped', 'skipped']);
    expect(plan.lastRunAt).toBeNull();
  });

  it('parks a schedule whose stored expression cannot be read', () => {
    const plan = planSchedule(
      schedule({ cronExpression: 'not cron' }),
      { hasActiveOccurrence: false },
      context(at(3000)),
      roomy(),
    );
    expect(plan).toEqual({
      occurrences: [],
      nextRunAt: null,
      lastRunAt: null,
      runCount: 0,
      disableNote: null,
      skipBuffered: false,
      skipClaimed: false,
    });
  });
});

describe('jitterDelayMs', () => {
  it('is deterministic, below jitterMs, and 0 without jitter', () => {
    const id = '0e4f6d7a-2b3c-5d4e-8f9a-0b1c2d3e4f5a';
    expect(jitterDelayMs(id, 1000)).toBe(jitterDelayMs(id, 1000));
    expect(jitterDelayMs(id, 1000)).toBeLessThan(1000);
    expect(jitterDelayMs(id, 0)).toBe(0);
  });

  describe('overlap policies with an active occurrence', () => {
    const now = at(3500); // slots 1, 2 and 3 s are due and on time
    const statuses = (overlapPolicy: ScheduleRow['overlapPolicy'], active: boolean) => {
      const plan = planSchedule(schedule({ overlapPolicy }), { hasActiveOccurrence: active }, context(now), roomy())!;
      return { plan, statuses: plan.occurrences.map((occurrence) => occurrence.status) };
    };

    it('allow runs every slot', () => {
      expect(statuses('allow', true).statuses).toEqual(['claimed', 'claimed', 'claimed']);
    });

    it('buffer_one keeps only the newest slot buffered and skips the stored buffered ones', () => {
      const { plan, statuses: result } = statuses('buffer_one', true);
      expect(result).toEqual(['skipped', 'skipped', 'buffered']);
      expect(plan).toMatchObject({ skipBuffered: true, runCount: 0, lastRunAt: at(3000) });
    });

    it('buffer_one runs the first slot when nothing is active and buffers the newest after it', () => {
      expect(statuses('buffer_one', false).statuses).toEqual(['claimed', 'skipped', 'buffered']);
    });

    it('buffer_all keeps every slot buffered, in order', () => {
      expect(statuses('buffer_all', true).statuses).toEqual(['buffered', 'buffered', 'buffered']);
      expect(statuses('buffer_all', false).statuses).toEqual(['claimed', 'buffered', 'buffered']);
    });

    it('cancel_other runs only the newest slot of a tick', () => {
      const { plan, statuses: result } = statuses('cancel_other', true);
      expect(result).toEqual(['skipped', 'skipped', 'claimed']);
      expect(plan.runCount).toBe(1);
    });

    it('cancel_other skips the stored claimed occurrences only when one may be there', () => {
      expect(statuses('cancel_other', true).plan.skipClaimed).toBe(true);
      expect(statuses('cancel_other', false).plan.skipClaimed).toBe(false);
      expect(statuses('allow', true).plan.skipClaimed).toBe(false);
    });
  });

  describe('pauseOnFailure', () => {
    const watched = schedule({ pauseOnFailure: true, enabledAt: at(500) });
    const failedAt = (completedAt: Date | null) => ({
      hasActiveOccurrence: false,
      latestPipeline: { id: 'p1', status: 'failed' as const, completedAt },
    });

    it('pauses instead of running when the newest pipeline failed after the schedule was enabled', () => {
      const plan = planSchedule(watched, failedAt(at(900)), context(at(3500)), roomy());
      expect(plan).toEqual({
        occurrences: [],
        nextRunAt: null,
        lastRunAt: null,
        runCount: 0,
        disableNote: 'paused after failure of execution p1',
        skipBuffered: false,
        skipClaimed: false,
      });
      // Even with the tick's budget spent: a pause writes no ledger row.
      expect(planSchedule(watched, failedAt(at(900)), context(at(3500)), { rows: 0, slots: 0 })).toMatchObject({
        disableNote: 'paused after failure of execution p1',
      });
    });

    it('runs on when the failure is not newer than the last enable, the newest pipeline did not fail, or the schedule does not watch', () => {
      const runs = (row: ScheduleRow, state: Parameters<typeof planSchedule>[1]) =>
        planSchedule(row, state, context(at(1500)), roomy())!.occurrences.map((occurrence) => occurrence.status);
      expect(runs(watched, failedAt(at(500)))).toEqual(['claimed']);
      expect(runs(watched, failedAt(at(100)))).toEqual(['claimed']);
      expect(runs(watched, { hasActiveOccurrence: false, latestPipeline: null })).toEqual(['claimed']);
      const completed = { id: 'p1', status: 'completed' as const, completedAt: at(900) };
      expect(runs(watched, { hasActiveOccurrence: false, latestPipeline: completed })).toEqual(['claimed']);
      expect(runs({ ...watched, pauseOnFailure: false }, failedAt(at(900)))).toEqual(['claimed']);
    });
  });

  it('maxRuns claims exactly the runs left, then disables the schedule', () => {
    const row = schedule({ maxRuns: 3, runCount: 1 });
    const plan = planSchedule(row, { hasActiveOccurrence: false }, context(at(5500)), roomy())!;
    expect(plan.occurrences.map((occurrence) => [occurrence.status, occurrence.scheduledTime])).toEqual([
      ['claimed', at(1000)],
      ['claimed', at(2000)],
    ]);
    expect(plan).toMatchObject({ runCount: 3, disableNote: 'maxRuns reached', nextRunAt: null });
    const spent = planSchedule({ ...row, runCount: 3 }, { hasActiveOccurrence: false }, context(at(5500)), roomy())!;
    expect(spent).toMatchObject({ occurrences: [], disableNote: 'maxRuns reached', nextRunAt: null });
  });

  it("follows the schedule's dst choice when it scans due slots", () => {
    // New York falls back 2026-11-01: 01:30 happens at 05:30Z (EDT) and 06:30Z (EST).
    const row = schedule({
      cronExpression: '0 30 1 * * *',
      timezone: 'America/New_York',
      nextRunAt: new Date('2026-11-01T05:30:00Z'),
      dst: { repeated: 'both', gap: 'shift' },
    });
    const now = new Date('2026-11-01T06:30:10Z');
    const plan = planSchedule(row, { hasActiveOccurrence: false }, context(now), roomy())!;
    expect(plan.occurrences.map((occurrence) => occurrence.scheduledTime.toISOString())).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T06:30:00.000Z',
    ]);
  });
});

describe('manualPlan', () => {
  const active = { hasActiveOccurrence: true, activePipelineIds: ['p1'] };
  const idle = { hasActiveOccurrence: false };

  it('runs a trigger at once when nothing is active, whatever the policy', () => {
    for (const overlapPolicy of ['allow', 'skip', 'buffer_one', 'buffer_all', 'cancel_other'] as const) {
      expect(manualPlan(schedule({ overlapPolicy }), idle, false)).toEqual({ status: 'claimed' });
    }
  });

  it('follows the overlap policy while an occurrence is active', () => {
    const plan = (overlapPolicy: ScheduleRow['overlapPolicy']) =>
      manualPlan(schedule({ overlapPolicy }), active, false);
    expect(plan('allow')).toEqual({ status: 'claimed' });
    expect(plan('skip')).toEqual({ status: 'skipped' });
    expect(plan('buffer_one')).toEqual({ status: 'buffered', skipBuffered: true });
    expect(plan('buffer_all')).toEqual({ status: 'buffered', skipBuffered: false });
    expect(plan('cancel_other')).toEqual({ status: 'claimed', skipClaimed: true, cancelPipelineIds: ['p1'] });
  });

  it('runs a forced trigger at once, cancelling and skipping nothing', () => {
    for (const overlapPolicy of ['skip', 'buffer_one', 'cancel_other'] as const) {
      expect(manualPlan(schedule({ overlapPolicy }), active, true)).toEqual({ status: 'claimed' });
    }
  });
});
