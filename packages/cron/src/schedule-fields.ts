import type { CatchupPolicy, OverlapPolicy } from '@orreryjs/core';

// The choices and defaults of a schedule's fields, defined once: validation checks against
// them, and the operator surfaces (CLI flags and help, dashboard forms) offer and explain
// them. Each list is derived from its descriptions, so a new choice cannot go unexplained.
// The `dst` choices and defaults live with the rules they select, in expression/dst.ts.

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

/** Every `catchupPolicy`, in the order forms offer them. */
export const CATCHUP_POLICIES = Object.keys(CATCHUP_POLICY_DESCRIPTIONS) as readonly CatchupPolicy[];
/** Every `overlapPolicy`, in the order forms offer them. */
export const OVERLAP_POLICIES = Object.keys(OVERLAP_POLICY_DESCRIPTIONS) as readonly OverlapPolicy[];
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
