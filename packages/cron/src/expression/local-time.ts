import type { IANAZone } from 'luxon';
import type { CronFields } from './cron-expression.js';
import { YEAR_SPEC } from './cron-syntax.js';
import { type DstGap, type DstRepeated, type DstRules, resolveDstRules } from './dst.js';
import { daysInMonth, hasQuartzDays, hasQuartzItems, type QuartzDays, quartzDaysOfMonth } from './quartz-days.js';
import { DAY_MS, dayOffsets, MIN_OFFSET_MS, SECOND_MS } from './timezone.js';

/** Longer than the longest gap a valid expression can have: February 29, 2096 then 2104. */
const SEARCH_DAYS = 9 * 366;
const { min: FIRST_YEAR, max: LAST_YEAR } = YEAR_SPEC;

/**
 * Lookup tables for walking local wall-clock time. `nextX[v]` is the smallest allowed value
 * `>= v`, or -1 (index `max + 1` is a -1 sentinel), so a search skips whole fields at once.
 */
export interface LocalMatcher {
  readonly nextSecond: Int8Array;
  readonly nextMinute: Int8Array;
  readonly nextHour: Int8Array;
  /** The plain day-of-month values as a bit mask: bit `d - 1` for day d. */
  readonly dayOfMonthMask: number;
  readonly month: readonly boolean[];
  /**
   * The plain day-of-week values as a mask of the days of a month, one per weekday of its 1st
   * (`dayOfWeekMasks[0]`: the month begins on a Sunday), 31 days long: a month's days are then
   * one index and one AND, never a pass over the month.
   */
  readonly dayOfWeekMasks: readonly number[];
  /** The expression's Quartz items when day-of-month has one, else null (the common, faster case). */
  readonly quartzDayOfMonth: QuartzDays | null;
  /** The expression's Quartz items when day-of-week has one, else null. */
  readonly quartzDayOfWeek: QuartzDays | null;
  /** The allowed years, ascending, or null for every year. */
  readonly years: readonly number[] | null;
  /** `isYear[year - 1970]`: whether a year is allowed (null for every year), so a day's check is one index. */
  readonly isYear: readonly boolean[] | null;
  readonly anyDayOfMonth: boolean;
  readonly anyDayOfWeek: boolean;
  /** Every date matches the day fields (both `*`, no Quartz item): the walk never looks at the date. */
  readonly everyDay: boolean;
  readonly followsRealClock: boolean;
  /** Which instances of a wall time repeated at fall-back fire. */
  readonly repeated: DstRepeated;
  /** Whether a wall time inside a spring-forward gap fires (shifted) or not. */
  readonly gap: DstGap;
}

/** A stretch of wall-clock time, `[fromWall, toWall)` in ms on the local calendar, read at one offset. */
interface Piece {
  readonly fromWall: number;
  readonly toWall: number;
  readonly offsetMs: number;
}

/** Builds the lookup tables once per expression, so each search only indexes arrays. */
export function compileMatcher(fields: CronFields, dst?: DstRules | null): LocalMatcher {
  return {
    ...resolveDstRules(fields.followsRealClock, dst),
    nextSecond: nextAllowed(fields.seconds, 59),
    nextMinute: nextAllowed(fields.minutes, 59),
    nextHour: nextAllowed(fields.hours, 23),
    dayOfMonthMask: fields.daysOfMonth.reduce((mask, day) => mask | (1 << (day - 1)), 0),
    month: membership(fields.months, 12),
    dayOfWeekMasks: Array.from({ length: 7 }, (_, firstWeekday) => weekdayMask(fields.daysOfWeek, firstWeekday)),
    quartzDayOfMonth: hasQuartzItems(fields.quartz, 'day-of-month') ? fields.quartz : null,
    quartzDayOfWeek: hasQuartzItems(fields.quartz, 'day-of-week') ? fields.quartz : null,
    years: fields.years,
    isYear:
      fields.years === null
        ? null
        : membership(
            fields.years.map((year) => year - FIRST_YEAR),
            LAST_YEAR - FIRST_YEAR,
          ),
    anyDayOfMonth: fields.anyDayOfMonth,
    anyDayOfWeek: fields.anyDayOfWeek,
    everyDay: fields.anyDayOfMonth && fields.anyDayOfWeek && !hasQuartzDays(fields.quartz),
    followsRealClock: fields.followsRealClock,
  };
}

/**
 * The first occurrence strictly after `after` (epoch ms), or null when none falls within
 * the next nine years (with a year field: before the end of the last allowed year).
 * Walks local calendar days, skipping years, months and days that cannot match, and maps
 * each matching day's wall times to instants by the DST rules.
 */
export function nextInstant(matcher: LocalMatcher, zone: IANAZone, after: number): number | null {
  // Offsets are at least MIN_OFFSET_MS (-12h), so this is the local date of `after` or earlier:
  // early enough for a fall-back across midnight, which shows the previous date again after `after`.
  let day = Math.floor((after + MIN_OFFSET_MS) / DAY_MS);
  const lastDay = searchEnd(matcher, day);
  for (day = nextMatchingDay(matcher, day, lastDay); day <= lastDay; day = nextMatchingDay(matcher, day + 1, lastDay)) {
    const pieces = dayPieces(matcher, zone, day);
    const found = firstInDay(matcher, pieces, day, after);
    if (found === null) continue;
    // When the clock falls back across midnight (St John's until 2010: 00:01 -> 23:01), the
    // next date begins before this one ends, so its first occurrence may come earlier.
    if (pieces.length === 1 || !isMatchingDay(matcher, day + 1)) return found;
    const following = firstInDay(matcher, dayPieces(matcher, zone, day + 1), day + 1, after);
    return following === null ? found : Math.min(found, following);
  }
  return null;
}

/**
 * Splits a local day into pieces read at one offset each. With no clock change that is the
 * whole day. At a change, the wall times between the two readings of the change (`low` to
 * `high`) are a gap when the clock springs forward and occur twice when it falls back. A
 * gap: `shift` reads them with the offset before (the piece before runs on to `high`),
 * `skip` leaves them out. A repeat: `first` keeps them only before the change, `last` only
 * after, `both` in both pieces. The defaults (see {@link resolveDstRules}) make a `*` hour
 * follow the real clock and a fixed hour fire once.
 */
function dayPieces(matcher: LocalMatcher, zone: IANAZone, day: number): Piece[] {
  const dayStart = day * DAY_MS;
  const dayEnd = dayStart + DAY_MS;
  const { offsetBeforeMs, offsetAfterMs, transitionAt } = dayOffsets(zone, day);
  if (offsetBeforeMs === offsetAfterMs) return [{ fromWall: dayStart, toWall: dayEnd, offsetMs: offsetBeforeMs }];
  const low = transitionAt + Math.min(offsetBeforeMs, offsetAfterMs);
  const high = transitionAt + Math.max(offsetBeforeMs, offsetAfterMs);
  const isGap = offsetAfterMs > offsetBeforeMs;
  const beforeEnds = isGap ? (matcher.gap === 'shift' ? high : low) : matcher.repeated === 'last' ? low : high;
  const afterStarts = isGap ? high : matcher.repeated === 'first' ? high : low;
  return [
    { fromWall: dayStart, toWall: Math.min(dayEnd, beforeEnds), offsetMs: offsetBeforeMs },
    { fromWall: Math.max(dayStart, afterStarts), toWall: dayEnd, offsetMs: offsetAfterMs },
  ].filter((piece) => piece.fromWall < piece.toWall);
}

/** The earliest instant after `after` among the day's pieces; pieces overlap at a fall-back. */
function firstInDay(matcher: LocalMatcher, pieces: readonly Piece[], day: number, after: number): number | null {
  let best: number | null = null;
  for (const piece of pieces) {
    // Wall times are whole seconds; the first one whose instant is past `after`.
    const earliest = Math.max(piece.fromWall, Math.floor((after + piece.offsetMs) / SECOND_MS) * SECOND_MS + SECOND_MS);
    if (earliest >= piece.toWall) continue;
    const secondOfDay = firstTimeOfDay(matcher, (earliest - day * DAY_MS) / SECOND_MS);
    if (secondOfDay === null) continue;
    const wall = day * DAY_MS + secondOfDay * SECOND_MS;
    if (wall >= piece.toWall) continue;
    const instant = wall - piece.offsetMs;
    if (best === null || instant < best) best = instant;
  }
  return best;
}

/** The first allowed time of day at or after `secondOfDay`, in seconds since midnight. */
function firstTimeOfDay(matcher: LocalMatcher, secondOfDay: number): number | null {
  const hour = Math.floor(secondOfDay / 3600);
  const minute = Math.floor(secondOfDay / 60) % 60;
  const second = secondOfDay % 60;
  const firstMinute = matcher.nextMinute[0]!;
  const firstSecond = matcher.nextSecond[0]!;
  const allowedHour = matcher.nextHour[hour]!;
  if (allowedHour === -1) return null;
  if (allowedHour > hour) return toSeconds(allowedHour, firstMinute, firstSecond);
  const allowedMinute = matcher.nextMinute[minute]!;
  if (allowedMinute === minute) {
    const allowedSecond = matcher.nextSecond[second]!;
    if (allowedSecond !== -1) return toSeconds(hour, minute, allowedSecond);
  }
  const laterMinute = allowedMinute === minute ? matcher.nextMinute[minute + 1]! : allowedMinute;
  if (laterMinute !== -1) return toSeconds(hour, laterMinute, firstSecond);
  const laterHour = matcher.nextHour[hour + 1]!;
  return laterHour === -1 ? null : toSeconds(laterHour, firstMinute, firstSecond);
}

function toSeconds(hour: number, minute: number, second: number): number {
  return hour * 3600 + minute * 60 + second;
}

/**
 * The last local day to search from `day`: nine years on; with a year field, the end of the
 * last allowed year instead, so that `0 0 1 1 * 2199` is found from 2026 (the walk jumps
 * over years not allowed, so this costs at most the days of the allowed years).
 */
function searchEnd(matcher: LocalMatcher, day: number): number {
  if (matcher.years === null) return day + SEARCH_DAYS;
  return Date.UTC(matcher.years.at(-1)! + 1, 0, 1) / DAY_MS - 1;
}

/** The first day from `day` on whose date matches, jumping over years and months that cannot match. */
function nextMatchingDay(matcher: LocalMatcher, day: number, lastDay: number): number {
  let candidate = day;
  while (candidate <= lastDay) {
    const date = new Date(candidate * DAY_MS);
    const year = date.getUTCFullYear();
    const month = date.getUTCMonth() + 1;
    if (!isAllowedYear(matcher, year)) {
      const nextYear = matcher.years?.find((allowed) => allowed > year);
      if (nextYear === undefined) return lastDay + 1;
      candidate = Date.UTC(nextYear, 0, 1) / DAY_MS;
    } else if (!matcher.month[month]) {
      candidate = Date.UTC(year, month, 1) / DAY_MS;
    } else if (matcher.everyDay) {
      return candidate;
    } else {
      // The month's matching days from this one on; the lowest set bit is the next match.
      const dayOfMonth = date.getUTCDate();
      const ahead = matchingDaysOf(matcher, year, month, candidate - dayOfMonth + 1) >>> (dayOfMonth - 1);
      if (ahead !== 0) return candidate + 31 - Math.clz32(ahead & -ahead);
      candidate = Date.UTC(year, month, 1) / DAY_MS;
    }
  }
  return candidate;
}

function isMatchingDay(matcher: LocalMatcher, day: number): boolean {
  const date = new Date(day * DAY_MS);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth() + 1;
  if (!isAllowedYear(matcher, year) || !matcher.month[month]) return false;
  if (matcher.everyDay) return true;
  const dayOfMonth = date.getUTCDate();
  return ((matchingDaysOf(matcher, year, month, day - dayOfMonth + 1) >>> (dayOfMonth - 1)) & 1) === 1;
}

function isAllowedYear(matcher: LocalMatcher, year: number): boolean {
  return matcher.isYear === null || matcher.isYear[year - FIRST_YEAR] === true;
}

/**
 * The days of `month` (1-12) of `year` that match the day fields, as a bit mask (bit `d - 1`
 * for day d), by cron's day rule: with both day fields restricted, a day matching either
 * fires; otherwise it must match both. A day field matches by its plain values or by one of
 * its Quartz items. `firstDay` is the local day number of the month's 1st. A few mask
 * operations (one step per Quartz rule), so the walk computes it afresh for each month it
 * reaches: a cache lookup would cost more.
 */
function matchingDaysOf(matcher: LocalMatcher, year: number, month: number, firstDay: number): number {
  const lastDay = daysInMonth(year, month);
  // Day 0 (1970-01-01) was a Thursday.
  const firstWeekday = (((firstDay + 4) % 7) + 7) % 7;
  let daysOfMonth = matcher.dayOfMonthMask;
  let daysOfWeek = matcher.dayOfWeekMasks[firstWeekday]!;
  if (matcher.quartzDayOfMonth !== null) {
    daysOfMonth |= quartzDaysOfMonth(matcher.quartzDayOfMonth, 'day-of-month', firstWeekday, lastDay);
  }
  if (matcher.quartzDayOfWeek !== null) {
    daysOfWeek |= quartzDaysOfMonth(matcher.quartzDayOfWeek, 'day-of-week', firstWeekday, lastDay);
  }
  const wholeMonth = 2 ** lastDay - 1;
  if (!matcher.anyDayOfMonth && !matcher.anyDayOfWeek) return (daysOfMonth | daysOfWeek) & wholeMonth;
  return (matcher.anyDayOfMonth ? wholeMonth : daysOfMonth) & (matcher.anyDayOfWeek ? wholeMonth : daysOfWeek);
}

/** The days 1-31 of a month whose 1st is `firstWeekday` that fall on one of `weekdays`, as a bit mask. */
function weekdayMask(weekdays: readonly number[], firstWeekday: number): number {
  let mask = 0;
  for (let day = 1; day <= 31; day += 1) {
    if (weekdays.includes((firstWeekday + day - 1) % 7)) mask |= 1 << (day - 1);
  }
  return mask;
}

function nextAllowed(values: readonly number[], max: number): Int8Array {
  const table = new Int8Array(max + 2).fill(-1);
  let next = -1;
  for (let value = max; value >= 0; value -= 1) {
    if (values.includes(value)) next = value;
    table[value] = next;
  }
  return table;
}

function membership(values: readonly number[], max: number): boolean[] {
  return Array.from({ length: max + 1 }, (_, value) => values.includes(value));
}
