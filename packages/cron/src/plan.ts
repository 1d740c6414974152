import {
  type CronExecutionSource,
  type DueScheduleState,
  type Logger,
  MAX_RUNS_NOTE,
  type ManualOccurrencePlan,
  type NewCronExecution,
  occurrenceId,
  type SchedulePlan,
  type ScheduleRow,
} from '@orreryjs/core';
import { parseCronExpression } from './expression/occurrences.js';
import { claimedOccurrence } from './schedule-context.js';
import type { CronSettings } from './settings.js';

/** What every plan of one tick shares. */
export interface PlanContext {
  now: Date;
  runnerId: string;
  settings: Pick<CronSettings, 'misfireThresholdMs' | 'maxCatchupAgeMs' | 'maxCatchupExecutions'>;
  logger: Logger;
}

/**
 * What is left of one tick's allowance, shared by the schedules it claims and spent as they
 * are planned: `rows` ledger rows (maxOccurrencesPerTick) and `slots` cron slots examined,
 * which bounds the synchronous work inside the claim transaction after a long outage.
 */
export interface TickBudget {
  rows: number;
  slots: number;
}

/** Slots one schedule may examine per tick: a day of a per-second schedule, about 0.1 s of work. */
export const SLOT_SCAN_LIMIT = 100_000;

/** One decision about a schedule's due slots, in slot order. */
type Step =
  | { kind: 'missed'; slots: Date[] }
  | { kind: 'run'; slot: Date; source: Extract<CronExecutionSource, 'schedule' | 'catchup'> };

/**
 * Decides, inside the claim transaction, what a due schedule does now: which of its due slots
 * run, which are skipped for overlap, which are summarised as missed, and where it resumes.
 *
 * - A slot claimed no later than `misfireThresholdMs` after its time is on time and runs.
 * - Later slots were missed; the catch-up policy decides: `skip` runs none, `run_once` the
 *   latest, `run_all` each one oldest first, at most `maxCatchupExecutions` per tick, after
 *   dropping those older than `maxCatchupAgeMs`. The slots not run get one `missed` row per
 *   decision, with `missedCount` and the first slot as its scheduled time; slots that already
 *   hold a ledger row (`state.takenSlots`, e.g. backfilled during the outage) are left out.
 * - `overlapPolicy: 'skip'`: the first slot to run is `skipped` when an earlier occurrence is
 *   still active, and every later one of the same tick is `skipped`: at most one is kept.
 * - `cancel_other`: the newest slot runs; earlier ones of the same tick, and stored ones still
 *   only `claimed` (`skipClaimed`), are `skipped`.
 * - `pauseOnFailure`: when the schedule's newest pipeline ended `failed` after it was last
 *   enabled, nothing runs and the schedule is disabled with the failure note.
 * - Slots at or after `endAt` never fire; past it `nextRunAt` becomes null.
 * - When the tick's budget runs out, `nextRunAt` stays at the first slot not decided, so the
 *   backlog drains over the following ticks; with nothing affordable the result is null and
 *   the schedule stays due as it was.
 */
export function planSchedule(
  schedule: ScheduleRow,
  state: DueScheduleState,
  context: PlanContext,
  budget: TickBudget,
): SchedulePlan | null {
  if (schedule.nextRunAt === null) return null;
  const failed = failedPipelineId(schedule, state);
  // Written in the claim, so the pause holds even if the runner that ended the pipeline died before pausing.
  if (failed !== null)
    return { ...unchanged(schedule), occurrences: [], nextRunAt: null, disableNote: failurePauseNote(failed) };
  if (budget.rows <= 0 || budget.slots <= 0) return null;
  let scan: SlotScan;
  try {
    scan = scanDueSlots(schedule, context.now, Math.min(budget.slots, SLOT_SCAN_LIMIT));
  } catch (error) {
    // A stored expression or zone this process cannot read: park the schedule (nextRunAt null) rather than fail
    // every tick; updating or re-enabling the schedule sets it again.
    context.logger.error({ err: error, scheduleId: schedule.id }, 'cron schedule cannot be evaluated; parked');
    return { ...unchanged(schedule), occurrences: [], nextRunAt: null };
  }
  budget.slots -= scan.slots.length;
  const steps = withoutTakenSlots(decideSteps(schedule, scan, context), state.takenSlots);
  return applySteps(schedule, state, steps, scan.resumeAt, context, budget);
}

interface SlotScan {
  /** Due slots, ascending, from nextRunAt up to now and before endAt. */
  slots: Date[];
  /** The first slot not scanned, before endAt; null when the schedule has no more. */
  resumeAt: Date | null;
  /** True when the scan stopped at its limit with more due slots left. */
  truncated: boolean;
}

function scanDueSlots(schedule: ScheduleRow, now: Date, limit: number): SlotScan {
  const cron = parseCronExpression(schedule.cronExpression, schedule.timezone, schedule.dst, schedule.startAt);
  const nowMs = now.getTime();
  const endMs = schedule.endAt?.getTime() ?? Number.POSITIVE_INFINITY;
  const slots: Date[] = [];
  let cursor: Date | null = schedule.nextRunAt;
  while (cursor !== null && cursor.getTime() <= nowMs && cursor.getTime() < endMs && slots.length < limit) {
    slots.push(cursor);
    cursor = cron.next(cursor);
  }
  const resumeAt = cursor !== null && cursor.getTime() < endMs ? cursor : null;
  return { slots, resumeAt, truncated: resumeAt !== null && resumeAt.getTime() <= nowMs };
}

function decideSteps(schedule: ScheduleRow, scan: SlotScan, context: PlanContext): Step[] {
  const nowMs = context.now.getTime();
  const lateBefore = nowMs - context.settings.misfireThresholdMs;
  const missed = scan.slots.filter((slot) => slot.getTime() < lateBefore);
  const onTime = scan.slots.slice(missed.length);
  const steps: Step[] = [];
  if (missed.length > 0) {
    switch (schedule.catchupPolicy) {
      case 'skip':
        steps.push({ kind: 'missed', slots: missed });
        break;
      case 'run_once':
        // A scan cut short inside the missed slots has not seen the latest one yet: record these, run it later.
        if (scan.truncated && onTime.length === 0) steps.push({ kind: 'missed', slots: missed });
        else {
          if (missed.length > 1) steps.push({ kind: 'missed', slots: missed.slice(0, -1) });
          steps.push({ kind: 'run', slot: missed.at(-1)!, source: 'catchup' });
        }
        break;
      case 'run_all': {
        const tooOldBefore = nowMs - context.settings.maxCatchupAgeMs;
        const tooOld = missed.filter((slot) => slot.getTime() < tooOldBefore);
        if (tooOld.length > 0) steps.push({ kind: 'missed', slots: tooOld });
        for (const slot of missed.slice(tooOld.length)) steps.push({ kind: 'run', slot, source: 'catchup' });
        break;
      }
    }
  }
  for (const slot of onTime) steps.push({ kind: 'run', slot, source: 'schedule' });
  return steps;
}

/**
 * Drops from the `missed` steps the slots that already hold a ledger row (a backfill during the
 * outage): the summary takes the id and time of its first free slot, so it never collides with
 * that row (and vanishes under ON CONFLICT DO NOTHING); a step left with no slot is dropped.
 */
function withoutTakenSlots(steps: Step[], takenSlots: readonly Date[] | undefined): Step[] {
  if (takenSlots === undefined || takenSlots.length === 0) return steps;
  const taken = new Set(takenSlots.map((slot) => slot.getTime()));
  return steps.flatMap((step): Step[] => {
    if (step.kind === 'run') return [step];
    const slots = step.slots.filter((slot) => !taken.has(slot.getTime()));
    return slots.length === 0 ? [] : [{ kind: 'missed', slots }];
  });
}

function applySteps(
  schedule: ScheduleRow,
  state: DueScheduleState,
  steps: readonly Step[],
  scannedTo: Date | null,
  context: PlanContext,
  budget: TickBudget,
): SchedulePlan | null {
  const occurrences: NewCronExecution[] = [];
  const plan = unchanged(schedule);
  let catchupRuns = 0;
  let active = state.hasActiveOccurrence;
  let resumeAt = scannedTo;
  const policy = schedule.overlapPolicy;
  for (const step of steps) {
    const overCatchupCap =
      step.kind === 'run' && step.source === 'catchup' && catchupRuns >= context.settings.maxCatchupExecutions;
    if (budget.rows <= 0 || overCatchupCap) {
      resumeAt = step.kind === 'run' ? step.slot : step.slots[0]!;
      break;
    }
    if (step.kind === 'run' && schedule.maxRuns !== null && plan.runCount >= schedule.maxRuns) {
      plan.disableNote = MAX_RUNS_NOTE;
      resumeAt = null;
      break;
    }
    budget.rows -= 1;
    if (step.kind === 'missed') {
      occurrences.push(missedRow(schedule, step.slots, context));
      continue;
    }
    if (step.source === 'catchup') catchupRuns += 1;
    const status = overlapStatus(policy, active);
    if (status === 'buffered' && policy === 'buffer_one') {
      // Only the newest waits: the one buffered before it (stored, or earlier in this tick) is skipped.
      plan.skipBuffered = true;
      for (const row of occurrences) if (row.status === 'buffered') row.status = 'skipped';
    }
    if (policy === 'cancel_other') {
      // The newest replaces every earlier one: an earlier slot of this same tick never starts.
      for (const row of occurrences) {
        if (row.status === 'claimed') {
          row.status = 'skipped';
          plan.runCount -= 1;
        }
      }
      // Nor does a stored one still waiting for its handoff (jittered, or its runner died): it would start after this one.
      if (state.hasActiveOccurrence) plan.skipClaimed = true;
    }
    if (policy !== 'allow') active = true;
    occurrences.push(runRow(schedule, step, status, context));
    if (status === 'claimed') plan.runCount += 1;
    if (status !== 'skipped' && (plan.lastRunAt === null || step.slot > plan.lastRunAt)) plan.lastRunAt = step.slot;
    if (status === 'claimed' && schedule.maxRuns !== null && plan.runCount >= schedule.maxRuns) {
      plan.disableNote = MAX_RUNS_NOTE;
      resumeAt = null;
      break;
    }
  }
  if (occurrences.length === 0 && steps.length > 0 && plan.disableNote === null) return null;
  return { ...plan, occurrences, nextRunAt: resumeAt };
}

/** The parts of a plan that {@link applySteps} updates slot by slot. */
interface PlanCounters {
  lastRunAt: Date | null;
  runCount: number;
  disableNote: string | null;
  skipBuffered: boolean;
  skipClaimed: boolean;
}

/** A plan that changes nothing yet: the schedule's own counters. */
function unchanged(schedule: ScheduleRow): PlanCounters {
  return {
    lastRunAt: schedule.lastRunAt,
    runCount: schedule.runCount,
    disableNote: null,
    skipBuffered: false,
    skipClaimed: false,
  };
}

/** The note of a schedule that `pauseOnFailure` disabled. */
export function failurePauseNote(executionId: string): string {
  return `paused after failure of execution ${executionId}`;
}

/**
 * The pipeline a `pauseOnFailure` schedule must pause for: its newest one, when that ended
 * `failed` after the schedule was last enabled (an older failure was paused for already, and
 * the schedule resumed since); null otherwise.
 */
export function failedPipelineId(schedule: ScheduleRow, state: DueScheduleState): string | null {
  const latest = state.latestPipeline;
  if (!schedule.pauseOnFailure || latest === undefined || latest === null || latest.status !== 'failed') return null;
  if (latest.completedAt === null || latest.completedAt.getTime() <= schedule.enabledAt.getTime()) return null;
  return latest.id;
}

/**
 * What an occurrence that is due to run becomes under the overlap policy, given whether an
 * earlier one is still active: `skip` skips it, `buffer_one`/`buffer_all` buffer it until
 * the active one ends; `allow` and `cancel_other` (which cancels the active pipelines) run it.
 */
export function overlapStatus(
  policy: ScheduleRow['overlapPolicy'],
  active: boolean,
): 'claimed' | 'skipped' | 'buffered' {
  if (!active) return 'claimed';
  if (policy === 'skip') return 'skipped';
  if (policy === 'buffer_one' || policy === 'buffer_all') return 'buffered';
  return 'claimed';
}

/**
 * What a manual trigger does, decided under the schedule's row lock as a tick decides a slot
 * (Temporal's behaviour): with no active occurrence, or when `force`d (`overlapPolicy: 'allow'`),
 * it runs; otherwise `skip` skips it, `buffer_one` buffers it in place of the one buffered
 * before, `buffer_all` buffers it behind the others, and `cancel_other` runs it, cancelling the
 * active pipelines and skipping the scheduler's occurrences still waiting to start.
 */
export function manualPlan(schedule: ScheduleRow, state: DueScheduleState, force: boolean): ManualOccurrencePlan {
  if (force) return { status: 'claimed' };
  const status = overlapStatus(schedule.overlapPolicy, state.hasActiveOccurrence);
  if (status === 'buffered') return { status, skipBuffered: schedule.overlapPolicy === 'buffer_one' };
  if (status === 'claimed' && schedule.overlapPolicy === 'cancel_other' && state.hasActiveOccurrence) {
    return { status, skipClaimed: true, cancelPipelineIds: state.activePipelineIds ?? [] };
  }
  return { status };
}

function runRow(
  schedule: ScheduleRow,
  step: Extract<Step, { kind: 'run' }>,
  status: 'claimed' | 'skipped' | 'buffered',
  context: PlanContext,
): NewCronExecution {
  const id = occurrenceId(schedule.id, step.slot);
  const delayMs = step.source === 'schedule' && status === 'claimed' ? jitterDelayMs(id, schedule.jitterMs) : 0;
  return {
    ...claimedOccurrence(schedule, step.slot, {
      id,
      now: context.now,
      runnerId: context.runnerId,
      source: step.source,
    }),
    fireAt: new Date(step.slot.getTime() + delayMs),
    status,
  };
}

function missedRow(schedule: ScheduleRow, slots: readonly Date[], context: PlanContext): NewCronExecution {
  const first = slots[0]!;
  // The slots it stands for never run, so the id of its first slot cannot collide with a run of that slot.
  const id = occurrenceId(schedule.id, first);
  return {
    ...claimedOccurrence(schedule, first, { id, now: context.now, runnerId: context.runnerId, source: 'catchup' }),
    status: 'missed',
    missedCount: slots.length,
  };
}

/**
 * The jitter of an occurrence: its id (a v5 UUID, so SHA-1 based and the same on every
 * instance) read as a number, modulo `jitterMs`. Spreads the handoffs of schedules that share
 * a time without any instance needing to agree on a random draw.
 */
export function jitterDelayMs(id: string, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  return Number.parseInt(id.replaceAll('-', '').slice(-12), 16) % jitterMs;
}
