import { occurrenceId, ValidationError } from '@orreryjs/core';
import { occurrencesBetween } from './expression/occurrences.js';
import type { Handoff } from './handoff.js';
import type { CronServiceOptions } from './options.js';
import { claimedOccurrence } from './schedule-context.js';
import type { ScheduleManager } from './schedules.js';
import { assertRunnable } from './trigger.js';
import { validateBackfillRange } from './validate.js';

/** Most slots one backfill may cover. */
const MAX_BACKFILL_SLOTS = 10_000;
// Rows per insert transaction: keeps each transaction short on a shared database.
const INSERT_CHUNK = 500;

type BackfillDeps = Pick<CronServiceOptions, 'store' | 'clock' | 'runnerId' | 'workflows'>;

/**
 * Runs a schedule's past slots in [start, end): every slot without a ledger row, or whose
 * row is `missed` or `abandoned` without a pipeline, gets a `backfill` occurrence (v5 id of
 * the slot, no jitter, overlap policy ignored) that is handed off before this returns.
 * Running it twice creates nothing new: each slot's row is unique.
 * @throws ValidationError when end is in the future, start ≥ end, or the range has over 10,000 slots.
 * @throws ScheduleNotFoundError, WorkflowNotFoundError.
 */
export async function backfillSchedule(
  deps: BackfillDeps,
  schedules: ScheduleManager,
  handoff: Handoff,
  idOrName: string,
  range: { start: Date; end: Date },
): Promise<{ created: number; existing: number }> {
  const schedule = await schedules.resolve(idOrName);
  assertRunnable(deps.workflows, schedule);
  const now = deps.clock.now();
  validateBackfillRange(range, now);
  const slots = occurrencesBetween(schedule.cronExpression, {
    timezone: schedule.timezone,
    start: range.start,
    end: range.end,
    limit: MAX_BACKFILL_SLOTS + 1,
    anchor: schedule.startAt ?? undefined,
  });
  if (slots.length > MAX_BACKFILL_SLOTS) {
    throw new ValidationError(
      `The backfill range ${range.start.toISOString()} – ${range.end.toISOString()} holds more than ${MAX_BACKFILL_SLOTS} slots of "${schedule.cronExpression}"; split it into smaller ranges.`,
    );
  }
  const rows = slots.map((slot) =>
    claimedOccurrence(schedule, slot, {
      id: occurrenceId(schedule.id, slot),
      now,
      runnerId: deps.runnerId,
      source: 'backfill',
    }),
  );

  let created = 0;
  let existing = 0;
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
    const inserted = await deps.store.insertOccurrences(rows.slice(start, start + INSERT_CHUNK));
    created += inserted.claimed.length;
    existing += inserted.existing;
    // Handed off chunk by chunk: rows already written are durable, so a failure here leaves them to recovery.
    await handoff.handOffAll(inserted.claimed);
  }
  return { created, existing };
}
