// Quartz's day rules, read the way Quartz's CronExpression documents them, but with cron's
// day-of-week numbers (0 or 7 = Sunday, 5 = Friday), so `5#3` is the third Friday as in
// cron-parser, not Quartz's third Thursday. Decision: each rule is an item of its field's
// list (`1,15,L`), which Quartz does not allow for L and W but which has one obvious meaning;
// ranges and steps of them (`L-3/2`, `1-5#2`) are refused.

/** The Quartz items of the two day fields, each list canonical: sorted, without duplicates. */
export interface QuartzDays {
  /** `L` (0) and `L-n` (n): the day n days before the last day of the month. */
  readonly lastDayOffsets: readonly number[];
  /** `nW`: the weekday nearest day n, within the month; none in a month without day n. */
  readonly nearestWeekdays: readonly number[];
  /** `LW`: the last weekday (Monday to Friday) of the month. */
  readonly lastWeekday: boolean;
  /** `d#k` as `d * 8 + k`: the k-th weekday d (0-6) of the month; none in a month without one. */
  readonly nthWeekdays: readonly number[];
  /** `dL`: the last weekday d (0-6) of the month. */
  readonly lastWeekdays: readonly number[];
}

/** The two fields that may hold Quartz items. */
export type DayField = 'day-of-month' | 'day-of-week';

/** A day field item that is a Quartz rule, read but not yet range-checked. */
export type QuartzItem =
  | { readonly kind: 'lastDay'; readonly offset: number }
  | { readonly kind: 'nearestWeekday'; readonly day: number }
  | { readonly kind: 'lastWeekday' }
  | { readonly kind: 'nth'; readonly weekday: string; readonly nth: number }
  | { readonly kind: 'lastOfWeekday'; readonly weekday: string };

/** The largest `n` of `L-n`: Quartz's bound, and the most a 31-day month allows. */
export const MAX_LAST_DAY_OFFSET = 30;
/** The largest `k` of `d#k`: no month has a sixth of any weekday. */
export const MAX_NTH = 5;

/** True when `text` looks like a Quartz day item (so a field that may not have one can say so). */
export function isQuartzDayItem(text: string): boolean {
  return /^(L(-\d+)?|LW|\d+W|[^#]+#\d*|\w+L)$/i.test(text);
}

/**
 * Reads one list item of a day field as a Quartz rule: the rule, a reason it is malformed,
 * or null when the item is not a Quartz rule (a plain value, range or step).
 */
export function readQuartzItem(field: DayField, item: string): QuartzItem | string | null {
  const text = item.toUpperCase();
  if (field === 'day-of-month') {
    if (text === 'L') return { kind: 'lastDay', offset: 0 };
    if (text === 'LW') return { kind: 'lastWeekday' };
    const offset = /^L-(\d+)$/.exec(text);
    if (offset !== null) {
      const n = Number(offset[1]);
      if (n < 1 || n > MAX_LAST_DAY_OFFSET) {
        return `L-${offset[1]} needs an offset of 1-${MAX_LAST_DAY_OFFSET} days before the last day (L alone is the last day)`;
      }
      return { kind: 'lastDay', offset: n };
    }
    const nearest = /^(\d+)W$/.exec(text);
    if (nearest !== null) {
      const day = Number(nearest[1]);
      if (day < 1 || day > 31) return `${item} needs a day of month 1-31 before W`;
      return { kind: 'nearestWeekday', day };
    }
    if (/[LW]/.test(text) && !/^[A-Z]{3}$/.test(text)) {
      return `${item} is not a Quartz day-of-month rule; write L, L-n (n 1-${MAX_LAST_DAY_OFFSET}), nW or LW, alone or in a list`;
    }
    return null;
  }
  const nth = /^([^#]+)#(\d*)$/.exec(text);
  if (nth !== null) {
    const k = Number(nth[2]);
    if (nth[2] === '' || k < 1 || k > MAX_NTH)
      return `${item} needs an occurrence of 1-${MAX_NTH} after # (5#3: the third Friday)`;
    return { kind: 'nth', weekday: nth[1]!, nth: k };
  }
  if (text === 'L') return 'L alone is ambiguous in day-of-week; write 6 for Saturday, or 5L for the last Friday';
  const last = /^(\d|[A-Z]{3})L$/.exec(text);
  if (last !== null) return { kind: 'lastOfWeekday', weekday: last[1]! };
  if (text.includes('#')) return `${item} is malformed; write d#k such as 5#3 or MON#1`;
  return null;
}

/** Days in `month` (1-12) of `year`, by the proleptic Gregorian calendar. */
export function daysInMonth(year: number, month: number): number {
  if (month !== 2) return MONTH_LENGTHS[month]!;
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
}

// Index 1-12; February's 28 is corrected for leap years by daysInMonth.
const MONTH_LENGTHS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

/**
 * The days of a month that the Quartz items of day-of-month (`field`) or of day-of-week
 * match, as a bit mask (bit `d - 1` for day d): each rule names its day directly, so a month
 * costs one step per rule. `firstWeekday` is the weekday of the 1st (0 = Sunday), `lastDay`
 * the month's length. Plain loops and no closure: the walk calls it once per month it reaches.
 */
export function quartzDaysOfMonth(rules: QuartzDays, field: DayField, firstWeekday: number, lastDay: number): number {
  let days = 0;
  if (field === 'day-of-week') {
    const nthWeekdays = rules.nthWeekdays;
    for (let index = 0; index < nthWeekdays.length; index += 1) {
      const code = nthWeekdays[index]!;
      const day = 1 + ((((code / 8) | 0) - firstWeekday + 7) % 7) + 7 * ((code % 8) - 1);
      if (day <= lastDay) days |= 1 << (day - 1);
    }
    const lastWeekdays = rules.lastWeekdays;
    for (let index = 0; index < lastWeekdays.length; index += 1) {
      days |= 1 << (lastDay - ((weekdayOf(firstWeekday, lastDay) - lastWeekdays[index]! + 7) % 7) - 1);
    }
    return days;
  }
  const lastDayOffsets = rules.lastDayOffsets;
  for (let index = 0; index < lastDayOffsets.length; index += 1) {
    const offset = lastDayOffsets[index]!;
    if (offset < lastDay) days |= 1 << (lastDay - offset - 1);
  }
  if (rules.lastWeekday) days |= 1 << (nearestWeekday(lastDay, lastDay, weekdayOf(firstWeekday, lastDay)) - 1);
  const nearestWeekdays = rules.nearestWeekdays;
  for (let index = 0; index < nearestWeekdays.length; index += 1) {
    const target = nearestWeekdays[index]!;
    if (target <= lastDay) days |= 1 << (nearestWeekday(target, lastDay, weekdayOf(firstWeekday, target)) - 1);
  }
  return days;
}

/** The weekday (0 = Sunday) of `day` in a month whose 1st is `firstWeekday`. */
function weekdayOf(firstWeekday: number, day: number): number {
  return (firstWeekday + day - 1) % 7;
}

/**
 * Quartz's `W`: the day itself on Monday to Friday; a Saturday moves to the Friday before and
 * a Sunday to the Monday after, unless that leaves the month (`1W` on a Saturday is Monday
 * the 3rd, `31W` on a Sunday is Friday the 29th).
 */
function nearestWeekday(target: number, lastDay: number, weekday: number): number {
  if (weekday === 6) return target === 1 ? 3 : target - 1;
  if (weekday === 0) return target === lastDay ? target - 2 : target + 1;
  return target;
}

/** The canonical text of a day field's Quartz items, after its plain values. */
export function renderQuartzItems(rules: QuartzDays, field: DayField): string[] {
  if (field === 'day-of-week') {
    return [
      ...rules.nthWeekdays.map((code) => `${Math.floor(code / 8)}#${code % 8}`),
      ...rules.lastWeekdays.map((weekday) => `${weekday}L`),
    ];
  }
  return [
    ...rules.nearestWeekdays.map((day) => `${day}W`),
    ...[...rules.lastDayOffsets].reverse().map((offset) => (offset === 0 ? 'L' : `L-${offset}`)),
    ...(rules.lastWeekday ? ['LW'] : []),
  ];
}

/** True when either day field has a Quartz item. */
export function hasQuartzDays(rules: QuartzDays): boolean {
  return hasQuartzItems(rules, 'day-of-month') || hasQuartzItems(rules, 'day-of-week');
}

/** True when `field` has a Quartz item. */
export function hasQuartzItems(rules: QuartzDays, field: DayField): boolean {
  if (field === 'day-of-week') return rules.nthWeekdays.length > 0 || rules.lastWeekdays.length > 0;
  return rules.lastDayOffsets.length > 0 || rules.nearestWeekdays.length > 0 || rules.lastWeekday;
}
