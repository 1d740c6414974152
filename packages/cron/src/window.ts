import type { ScheduleDst } from '@orreryjs/core';
import { parseCronExpression } from './expression/occurrences.js';

/** The timing fields of a schedule: what decides when it fires. */
export interface ScheduleTiming {
  cronExpression: string;
  timezone: string;
  startAt: Date | null;
  endAt: Date | null;
  /** The schedule's DST choices; null or absent: the default rules. */
  dst?: ScheduleDst | null;
}

/**
 * The first occurrence a schedule (re)starting now may fire: strictly after `now`, and not
 * before `startAt` (the window [startAt, endAt) includes its start); null when none falls
 * before `endAt`. Slots at or before `now` are dropped, so enabling a schedule after a long
 * pause fires nothing stale.
 */
export function firstRunAt(timing: ScheduleTiming, now: Date): Date | null {
  const cron = parseCronExpression(timing.cronExpression, timing.timezone, timing.dst, timing.startAt);
  const startMs = timing.startAt?.getTime() ?? Number.NEGATIVE_INFINITY;
  // `next` is strictly after its argument: begin 1 ms before startAt so that startAt itself counts.
  const after = startMs > now.getTime() ? new Date(startMs - 1) : now;
  return beforeEnd(cron.next(after), timing.endAt);
}

/**
 * {@link firstRunAt} at one `now`, memoised by timing: a sync of 100,000 schedules has a few
 * distinct timings, and each would otherwise walk its expression once per schedule (twice
 * with the can-fire check). The returned Dates are shared between the schedules of a timing;
 * like every Date of a row, they are never mutated.
 */
export function firstRunAtMemo(now: Date): (timing: ScheduleTiming) => Date | null {
  const memo = new Map<string, Date | null>();
  return (timing) => {
    const key = `${timing.cronExpression}\n${timing.timezone}\n${timing.dst?.repeated ?? ''}\n${timing.dst?.gap ?? ''}\n${timing.startAt?.getTime() ?? ''}\n${timing.endAt?.getTime() ?? ''}`;
    let first = memo.get(key);
    if (first === undefined) {
      first = firstRunAt(timing, now);
      memo.set(key, first);
    }
    return first;
  };
}

/** `slot` when it lies before `endAt` (or there is no end), else null. */
function beforeEnd(slot: Date | null, endAt: Date | null): Date | null {
  if (slot === null) return null;
  return endAt === null || slot.getTime() < endAt.getTime() ? slot : null;
}

/** True when two timings fire at the same instants (expressions and zones are stored canonical). */
export function sameTiming(a: ScheduleTiming, b: ScheduleTiming): boolean {
  return timingChanges(a, b).length === 0;
}

/** The names {@link timingChanges} gives the timing fields: a change of one moves nextRunAt. */
export const TIMING_FIELDS: ReadonlySet<string> = new Set(['cronExpression', 'timezone', 'dst', 'startAt', 'endAt']);

/** The timing fields in which `b` differs from `a`, in field order (expressions and zones are stored canonical). */
export function timingChanges(a: ScheduleTiming, b: ScheduleTiming): string[] {
  const changed: string[] = [];
  if (a.cronExpression !== b.cronExpression) changed.push('cronExpression');
  if (a.timezone !== b.timezone) changed.push('timezone');
  if (a.dst?.repeated !== b.dst?.repeated || a.dst?.gap !== b.dst?.gap) changed.push('dst');
  if (!sameInstant(a.startAt, b.startAt)) changed.push('startAt');
  if (!sameInstant(a.endAt, b.endAt)) changed.push('endAt');
  return changed;
}

/** True when both are null or denote the same millisecond. */
function sameInstant(a: Date | null, b: Date | null): boolean {
  return a === null || b === null ? a === b : a.getTime() === b.getTime();
}
