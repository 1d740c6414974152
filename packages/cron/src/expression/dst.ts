import { type ScheduleDst, ValidationError } from '@orreryjs/core';

// What a schedule's `dst` may say and what it means when it says nothing, defined once: the
// evaluation applies these rules, validation checks against the choices, and the operator
// surfaces (CLI flags and help, dashboard forms) offer and explain them. Each list of choices
// is derived from its descriptions, so a new choice cannot go unexplained.

/** Which instances of a wall time that occurs twice at fall-back fire. */
export type DstRepeated = ScheduleDst['repeated'];
/** `shift`: a wall time inside a spring-forward gap fires once, read with the offset before the gap; `skip`: not that day. */
export type DstGap = ScheduleDst['gap'];
/** Per-schedule DST choices; a missing field keeps the default rule of the expression. */
export interface DstRules {
  repeated?: DstRepeated;
  gap?: DstGap;
}

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

/**
 * The DST rules an expression follows, with `dst` overriding the defaults: a `*` hour
 * follows the real clock (`both`, `skip`), a fixed hour fires once (`first`, `shift`).
 */
export function resolveDstRules(
  followsRealClock: boolean,
  dst: DstRules | null | undefined,
): { repeated: DstRepeated; gap: DstGap } {
  const defaults = followsRealClock ? DST_DEFAULTS.realClock : DST_DEFAULTS.fixedHour;
  return { repeated: dst?.repeated ?? defaults.repeated, gap: dst?.gap ?? defaults.gap };
}

const DST_CHOICES: Readonly<Record<string, readonly string[]>> = {
  repeated: DST_REPEATED_CHOICES,
  gap: DST_GAP_CHOICES,
};

/** Refuses a `dst` that is not `{ repeated?, gap? }` with listed values. */
export function checkDst(dst: unknown): void {
  if (dst === undefined || dst === null) return;
  if (typeof dst !== 'object' || Array.isArray(dst)) {
    throw new ValidationError(`dst must be an object { repeated?, gap? }, got ${String(dst)}.`);
  }
  for (const [key, value] of Object.entries(dst)) {
    const choices = DST_CHOICES[key];
    if (choices === undefined) {
      throw new ValidationError(`Unknown dst field "${key}": the fields are repeated and gap.`);
    }
    if (value !== undefined && !choices.includes(value as string)) {
      throw new ValidationError(
        `dst.${key} must be one of ${choices.map((choice) => `'${choice}'`).join(', ')}, got ${JSON.stringify(value)}.`,
      );
    }
  }
}
