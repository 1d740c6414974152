import { type ScheduleRow, silentLogger } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { jitterDelayMs, planSchedule, SLOT_SCAN_LIMIT, type TickBudget } from '../src/plan.js';
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
    expect(plan).toEqual({ occurrences: [], nextRunAt: null, lastRunAt: null });
  });
});

describe('jitterDelayMs', () => {
  it('is deterministic, below jitterMs, and 0 without jitter', () => {
    const id = '0e4f6d7a-2b3c-5d4e-8f9a-0b1c2d3e4f5a';
    expect(jitterDelayMs(id, 1000)).toBe(jitterDelayMs(id, 1000));
    expect(jitterDelayMs(id, 1000)).toBeLessThan(1000);
    expect(jitterDelayMs(id, 0)).toBe(0);
  });
});
