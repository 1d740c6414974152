import type { CatchupPolicy, OverlapPolicy } from '@orreryjs/core';
import type { DstGap, DstRepeated } from './local-time.js';

// The choices and defaults of a schedule's fields, defined once: validation checks against
// them, and the operator surfaces (CLI flags and help, dashboard forms) offer and explain
// them. Each list is derived from its descriptions, so a new choice cannot go unexplained.

/** What each `catchupPolicy` does with the slots missed while no runner was running. */
export const CATCHUP_POLICY_DESCRIPTIONS: Readonly<Record<CatchupPolicy, string>> = {
  skip: 'run none of them',
  run_once: 'run the latest one once, then resume the cadence',
  run_all: 'run every one, oldest first',
};

/** What each `overlapPolicy` does with a slot that comes while an earlier one is still active. */
export const OVERLAP_POLICY_DESCRIPTIONS: Readonly<Record<OverlapPolicy, string>> = {
  allow: 'run it anyway',
  skip: 'record it as skipped and run nothing',
  buffer_one: 'keep the newest waiting until the active one ends (an older waiting one is skipped)',
  buffer_all: 'keep every one waiting, then run them one at a time, oldest first',
  cancel_other: 'cancel the active pipeline and run the new one at once',
};

/** What each `dst.repeated` choice fires of a wall time that occurs twice at fall-back. */
export const DST_REPEATED_DESCRIPTIONS: Readonly<Record<DstRepeated, string>> = {
  first: 'its first instance',
  last: 'its last instance',
  both: 'both instances',
};

/** What each `dst.gap` choice does with a wall time inside a spring-forward gap. */
export const DST_GAP_DESCRIPTIONS: Readonly<Record<DstGap, string>> = {
  shift: 'fire once, read with the offset before the gap (02:30 fires at 03:30)',
  skip: 'do not fire that day',
};

/** Every `catchupPolicy`, in the order forms offer them. */
export const CATCHUP_POLICIES = Object.keys(CATCHUP_POLICY_DESCRIPTIONS) as readonly CatchupPolicy[];
/** Every `overlapPolicy`, in the order forms offer them. */
export const OVERLAP_POLICIES = Object.keys(OVERLAP_POLICY_DESCRIPTIONS) as readonly OverlapPolicy[];
/** Every `dst.repeated` choice. */
export const DST_REPEATED_CHOICES = Object.keys(DST_REPEATED_DESCRIPTIONS) as readonly DstRepeated[];
/** Every `dst.gap` choice. */
export const DST_GAP_CHOICES = Object.keys(DST_GAP_DESCRIPTIONS) as readonly DstGap[];

/**
 * The DST rules of a schedule without `dst` (and of a rule its `dst` leaves out): an
 * expression whose hour field starts with `*` follows the real clock; a fixed hour fires once.
 */
export const DST_DEFAULTS: Readonly<{
  fixedHour: Readonly<{ repeated: DstRepeated; gap: DstGap }>;
  realClock: Readonly<{ repeated: DstRepeated; gap: DstGap }>;
}> = {
  fixedHour: { repeated: 'first', gap: 'shift' },
  realClock: { repeated: 'both', gap: 'skip' },
};

/** The longest `note` a schedule keeps, in characters. */
export const MAX_NOTE_LENGTH = 1000;

/** What a schedule input's optional fields default to (`dst`, `note` and the window: none). */
export const SCHEDULE_DEFAULTS: Readonly<{
  timezone: string;
  enabled: boolean;
  catchupPolicy: CatchupPolicy;
  overlapPolicy: OverlapPolicy;
  pauseOnFailure: boolean;
  maxRuns: number | null;
  jitterMs: number;
}> = {
  timezone: 'UTC',
  enabled: true,
  catchupPolicy: 'run_once',
  overlapPolicy: 'allow',
  pauseOnFailure: false,
  maxRuns: null,
  jitterMs: 0,
};
