import { InvalidTimezoneError } from '@orreryjs/core';
import { IANAZone } from 'luxon';

/** Wall times are whole seconds of this many milliseconds. */
export const SECOND_MS = 1000;
const HOUR_MS = 3_600_000;
/** One local calendar day; local days are numbered from 1970-01-01, as `dayOffsets` takes them. */
export const DAY_MS = 86_400_000;
/** The lowest UTC offset a zone has had since 1970: -12h. */
export const MIN_OFFSET_MS = -12 * HOUR_MS;
/** The highest UTC offset a zone has had since 1970: +14h. */
export const MAX_OFFSET_MS = 14 * HOUR_MS;

// Checking a zone builds an Intl.DateTimeFormat (~0.1 ms), which would dominate parsing
// 100,000 schedules; the answers never change within a process.
const canonicalZones = new Map<string, string>();
const CANONICAL_ZONES_LIMIT = 1000;

/**
 * Checks that `timezone` is an IANA zone name and returns its canonical spelling: the case
 * the tz database uses (`europe/london` → `Europe/London`) and `UTC` for every name of UTC.
 * Other aliases are kept as written, because ICU's canonical ids are sometimes the outdated
 * names (`Asia/Calcutta` for `Asia/Kolkata`, `Europe/Kiev` for `Europe/Kyiv`).
 * @throws InvalidTimezoneError naming the zone and suggesting the expected form.
 */
export function validateTimezone(timezone: string): string {
  let canonical = canonicalZones.get(timezone);
  if (canonical === undefined) {
    canonical = canonicalZoneName(timezone);
    if (canonicalZones.size >= CANONICAL_ZONES_LIMIT) canonicalZones.clear();
    canonicalZones.set(timezone, canonical);
  }
  return canonical;
}

function canonicalZoneName(timezone: string): string {
  if (!IANAZone.isValidZone(timezone)) {
    throw new InvalidTimezoneError(
      `Invalid timezone "${timezone}": not an IANA time zone name; use a name such as 'Europe/London', 'America/New_York' or 'UTC'`,
    );
  }
  const resolved = new Intl.DateTimeFormat('en-US', { timeZone: timezone }).resolvedOptions().timeZone;
  return resolved === 'UTC' || resolved.toLowerCase() === timezone.toLowerCase() ? resolved : timezone;
}

/**
 * The UTC offsets that apply during one local calendar day. When they differ, the clock
 * changed at `transitionAt` (epoch ms); wall times are read with `offsetBeforeMs` before
 * it and `offsetAfterMs` from it on.
 */
export interface DayOffsets {
  readonly offsetBeforeMs: number;
  readonly offsetAfterMs: number;
  readonly transitionAt: number;
}

// The scheduler asks about the same few zones and days for many schedules; a transition
// costs a binary search of ~18 offset look-ups, a plain day two. Cleared, not evicted:
// entries are cheap to recompute and the map only needs to stay bounded.
const dayOffsetsCache = new Map<string, DayOffsets>();
const DAY_OFFSETS_CACHE_LIMIT = 20_000;

/**
 * The offsets of local day `day` (days since 1970-01-01 on the local calendar) in `zone`.
 * Assumes at most one clock change within ~52 hours, true of every zone in the tz database since 1970.
 */
export function dayOffsets(zone: IANAZone, day: number): DayOffsets {
  const key = `${zone.name} ${day}`;
  let offsets = dayOffsetsCache.get(key);
  if (offsets === undefined) {
    offsets = computeDayOffsets(zone, day);
    if (dayOffsetsCache.size >= DAY_OFFSETS_CACHE_LIMIT) dayOffsetsCache.clear();
    dayOffsetsCache.set(key, offsets);
  }
  return offsets;
}

function computeDayOffsets(zone: IANAZone, day: number): DayOffsets {
  // Offsets lie within MIN_OFFSET_MS..MAX_OFFSET_MS, so every instant of the local day falls
  // in this window (a margin of the largest offset on both sides).
  const windowStart = day * DAY_MS - MAX_OFFSET_MS;
  const windowEnd = (day + 1) * DAY_MS + MAX_OFFSET_MS;
  const offsetBeforeMs = offsetMs(zone, windowStart);
  const offsetAfterMs = offsetMs(zone, windowEnd);
  if (offsetBeforeMs === offsetAfterMs) return { offsetBeforeMs, offsetAfterMs, transitionAt: windowEnd };
  return { offsetBeforeMs, offsetAfterMs, transitionAt: findTransition(zone, windowStart, windowEnd, offsetBeforeMs) };
}

/** The first whole second in (`from`, `to`] whose offset is no longer `offsetBeforeMs`. */
function findTransition(zone: IANAZone, from: number, to: number, offsetBeforeMs: number): number {
  let low = from;
  let high = to;
  while (high - low > SECOND_MS) {
    const middle = low + Math.floor((high - low) / 2 / SECOND_MS) * SECOND_MS;
    if (offsetMs(zone, middle) === offsetBeforeMs) low = middle;
    else high = middle;
  }
  return high;
}

// Luxon gives minutes, fractional for old local-mean-time offsets (-4:56:02); rounding keeps
// every wall time a whole number of seconds.
function offsetMs(zone: IANAZone, at: number): number {
  return Math.round(zone.offset(at) * 60) * SECOND_MS;
}
