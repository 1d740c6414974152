import type { CronExecutionSource, Json, JsonObject, NewCronExecution, ScheduleRow } from '@orreryjs/core';

/** The parts of a schedule that its occurrences' context keys describe. */
export interface ScheduleIdentity {
  id: string;
  name: string | null;
  timezone: string;
  cronExpression: string;
  context: JsonObject;
}

/**
 * The input context of an occurrence: the schedule's context, then the schedule keys, which
 * win over user keys of the same name. Stored as the ledger row's snapshot at claim, so
 * that handoff and recovery on any instance start the pipeline with the same input.
 */
export function occurrenceContext(schedule: ScheduleIdentity, scheduledTime: Date): JsonObject {
  return {
    ...schedule.context,
    scheduled_time: scheduledTime.toISOString(),
    schedule_id: schedule.id,
    schedule_name: schedule.name,
    schedule_timezone: schedule.timezone,
    cron_expression: schedule.cronExpression,
  };
}

/** Who claims an occurrence, when, under which id and as what. */
export interface OccurrenceClaim {
  id: string;
  now: Date;
  runnerId: string;
  source: CronExecutionSource;
}

/**
 * A ledger row claiming `slot` of `schedule` to run now, firing at its slot: the row every
 * source writes (schedule, catch-up, manual, backfill); callers override what differs.
 */
export function claimedOccurrence(schedule: ScheduleRow, slot: Date, claim: OccurrenceClaim): NewCronExecution {
  return {
    id: claim.id,
    scheduleId: schedule.id,
    workflowName: schedule.workflowName,
    context: occurrenceContext(schedule, slot),
    scheduledTime: slot,
    fireAt: slot,
    claimedAt: claim.now,
    claimedBy: claim.runnerId,
    status: 'claimed',
    source: claim.source,
    missedCount: 0,
  };
}

/** The context of a recovery handoff: the ledger row's snapshot plus the recovery keys. */
export function recoveryContext(snapshot: JsonObject, attempt: number): JsonObject {
  return { ...snapshot, is_recovery: true, recovery_attempt: attempt };
}

/** The schedule name recorded in a ledger row's context snapshot (for event payloads). */
export function scheduleNameOf(row: { context: JsonObject }): string | null {
  const name: Json | undefined = row.context.schedule_name;
  return typeof name === 'string' ? name : null;
}
