import { CronExpressionParser, type CronField } from 'cron-parser';
import { FIELD_SPECS, invalid, readCronSyntax, YEAR_SPEC } from './cron-syntax.js';
import { isIntervalExpression, readInterval, renderInterval } from './interval.js';
import { ParseCache } from './memo.js';
import { hasQuartzDays, type QuartzDays, renderQuartzItems } from './quartz-days.js';

/**
 * The sets of values a cron expression allows, expanded, plus the facts the DST rules and
 * the day-of-month/day-of-week rule depend on. Internal: callers use `ParsedCron`.
 */
export interface CronFields {
  readonly kind: 'calendar';
  readonly seconds: readonly number[];
  readonly minutes: readonly number[];
  readonly hours: readonly number[];
  readonly daysOfMonth: readonly number[];
  readonly months: readonly number[];
  /** 0-6, Sunday = 0 (a written 7 is folded into 0). */
  readonly daysOfWeek: readonly number[];
  /** The years allowed (1970-2199), or null for every year (no year field, or one covering them all). */
  readonly years: readonly number[] | null;
  /** Quartz day items (`L`, `15W`, `5#3`, `5L` …); they match besides `daysOfMonth` and `daysOfWeek`. */
  readonly quartz: QuartzDays;
  /** Day-of-month is unrestricted; when both day fields are restricted, a day matching either fires. */
  readonly anyDayOfMonth: boolean;
  /** Day-of-week is unrestricted. */
  readonly anyDayOfWeek: boolean;
  /** The hour field starts with `*`: occurrences follow the real clock across DST changes. */
  readonly followsRealClock: boolean;
  /** The expression was written with a seconds field. */
  readonly hasSeconds: boolean;
  /** Canonical 6-field text (7 with a year): expressions with the same text fire at the same instants. */
  readonly normalized: string;
}

/** An `@every <duration>` expression: absolute instants `anchor + k·everyMs`. */
export interface IntervalFields {
  readonly kind: 'interval';
  readonly everyMs: number;
  /** Intervals follow the real clock: DST never moves them. */
  readonly followsRealClock: true;
  /** The interval is not a whole number of minutes. */
  readonly hasSeconds: boolean;
  /** Canonical text, `@every 1h30m`. */
  readonly normalized: string;
}

// Validating an expression costs tens of µs (cron-parser expands every field), and a sync of
// 100,000 schedules reads each one's expression three times (as written, then its canonical
// text for the first run and the can-fire check) over a few distinct texts: memoised by text.
// Safe to share: the results are frozen.
const fieldsCache = new ParseCache<CronFields | IntervalFields>();

/**
 * Validates any schedule expression: a calendar one (see {@link parseCronFields}) or an
 * `@every <duration>` interval. Memoised by text; the result is frozen.
 * @throws InvalidCronExpressionError naming the expression and what is wrong.
 */
export function parseExpressionFields(expression: string): CronFields | IntervalFields {
  // Expressions also arrive from JSON and untyped callers: a non-string is refused, uncached.
  if (typeof expression !== 'string') return parseCronFields(expression);
  return fieldsCache.get(expression, () => deepFreeze(readExpressionFields(expression)));
}

function readExpressionFields(expression: string): CronFields | IntervalFields {
  if (isIntervalExpression(expression)) {
    const everyMs = readInterval(expression);
    return {
      kind: 'interval',
      everyMs,
      followsRealClock: true,
      hasSeconds: everyMs % 60_000 !== 0,
      normalized: renderInterval(everyMs),
    };
  }
  return parseCronFields(expression);
}

/** `value` with itself, its arrays and its nested objects frozen. */
function deepFreeze<T>(value: T): T {
  for (const inner of Object.values(value as object)) {
    if (typeof inner === 'object' && inner !== null) deepFreeze(inner);
  }
  return Object.freeze(value);
}

// The two cron-parser 5.10.5 errors our syntax check leaves to it, reworded to name the field.
const DAY_NEVER_OCCURS = 'Invalid explicit day of month definition';
const DUPLICATE_VALUE = /^Cron(\w+) Validation error, duplicate values found: (\w+)$/;
const FIELD_LABELS: Readonly<Record<string, string>> = {
  Second: 'second',
  Minute: 'minute',
  Hour: 'hour',
  DayOfMonth: 'day-of-month',
  Month: 'month',
  DayOfWeek: 'day-of-week',
};

/**
 * Validates a cron expression (the syntax `parseCronExpression` documents) and expands its
 * fields with cron-parser, after our own syntax check, whose errors name the field at fault.
 *
 * A day field is unrestricted only when written `*`, as in cron-parser; a restricted day
 * field that still covers every day (`0-6`, `1-31`) makes every day match, so both day
 * fields then count as unrestricted.
 * @throws InvalidCronExpressionError naming the expression and, where one is at fault, the field.
 */
export function parseCronFields(expression: string): CronFields {
  const syntax = readCronSyntax(expression);
  const [, , hourText = '', dayOfMonthText, , dayOfWeekText] = syntax.fields;
  // A day-of-week of Quartz items only reaches cron-parser as `*`; written `0-6` instead it
  // stays restricted, so cron-parser does not refuse a day-of-month that only the day-of-week
  // lets fire (`0 0 30 2 5L`, as `0 0 30 2 MON`). Its values are not used: see `daysOfWeek`.
  const parserFields =
    dayOfWeekText === '*' && !syntax.anyDayOfWeek ? [...syntax.fields.slice(0, 5), '0-6'] : syntax.fields;
  const expanded = expandWithCronParser(expression, parserFields);
  // A day field whose items are all Quartz rules reached cron-parser as `*`: it has no plain values.
  const daysOfMonth = dayOfMonthText === '*' && !syntax.anyDayOfMonth ? [] : expanded.dayOfMonth;
  const daysOfWeek =
    dayOfWeekText === '*' && !syntax.anyDayOfWeek
      ? []
      : [...new Set(expanded.dayOfWeek.map((day) => day % 7))].sort((a, b) => a - b);
  const everyDay =
    (!syntax.anyDayOfMonth && daysOfMonth.length === 31) || (!syntax.anyDayOfWeek && daysOfWeek.length === 7);
  const years = syntax.year === null ? null : expandYears(expression, syntax.year);
  const fields = {
    kind: 'calendar' as const,
    seconds: expanded.second,
    minutes: expanded.minute,
    hours: expanded.hour,
    daysOfMonth,
    months: expanded.month,
    daysOfWeek,
    years: years?.length === YEAR_SPEC.max - YEAR_SPEC.min + 1 ? null : years,
    quartz: syntax.quartz,
    anyDayOfMonth: everyDay || syntax.anyDayOfMonth,
    anyDayOfWeek: everyDay || syntax.anyDayOfWeek,
    followsRealClock: hourText.startsWith('*'),
    hasSeconds: syntax.hasSeconds,
  };
  return { ...fields, normalized: normalizeFields(fields) };
}

/**
 * Returns the canonical text of a cron expression: 6 fields, seconds first, macros expanded,
 * names replaced by numbers, lists sorted and compacted. Two expressions with the same
 * canonical text fire at the same instants in every zone, so schedule definitions compare
 * by it: `@daily`, `0 0 * * *` and `0 0 0 * * *` all give `0 0 0 * * *`. An hour written
 * with `*` keeps it (`0 * * * *` → `0 0 * * * *`, `0 0-23 * * *` → `0 0 0-23 * * *`),
 * because the DST rules treat the two differently. A year field is kept (as a seventh
 * field) only when it restricts the years; `?` becomes `*`; a day field lists its plain
 * values, then `nW`, `L-n` (earliest first), `L`, `LW`, or `d#k`, then `dL` (`MON#1` → `1#1`).
 * An interval keeps its form with the duration in the largest units (`@every 90m` →
 * `@every 1h30m`).
 * @throws InvalidCronExpressionError naming the expression and the field at fault.
 */
export function normalizeCronExpression(expression: string): string {
  return parseExpressionFields(expression).normalized;
}

/** The years a year field allows, ascending: values, ranges, lists, steps, `*`, within 1970-2199. */
function expandYears(expression: string, field: string): number[] {
  const years = new Set<number>();
  for (const item of field.split(',')) {
    const [range = '', stepText] = item.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    const [startText = '', endText] = range.split('-');
    const start = range === '*' ? YEAR_SPEC.min : Number(startText);
    const end =
      range === '*' || (endText === undefined && stepText !== undefined) ? YEAR_SPEC.max : Number(endText ?? startText);
    for (let year = start; year <= end; year += step) {
      if (years.has(year)) throw invalid(expression, `year field lists ${year} more than once`);
      years.add(year);
    }
  }
  return [...years].sort((a, b) => a - b);
}

type ExpandedFields = Record<'second' | 'minute' | 'hour' | 'dayOfMonth' | 'month' | 'dayOfWeek', number[]>;

function expandWithCronParser(expression: string, fields: readonly string[]): ExpandedFields {
  try {
    const parsed = CronExpressionParser.parse(fields.join(' ')).fields;
    return {
      second: numbers(parsed.second),
      minute: numbers(parsed.minute),
      hour: numbers(parsed.hour),
      dayOfMonth: numbers(parsed.dayOfMonth),
      month: numbers(parsed.month),
      dayOfWeek: numbers(parsed.dayOfWeek),
    };
  } catch (error) {
    throw invalid(expression, describeCronParserError(error, fields), error);
  }
}

function describeCronParserError(error: unknown, fields: readonly string[]): string {
  const message = error instanceof Error ? error.message : String(error);
  if (message === DAY_NEVER_OCCURS) return `day-of-month field ${fields[3]} never occurs in month field ${fields[4]}`;
  const duplicate = DUPLICATE_VALUE.exec(message);
  if (duplicate === null) return message;
  const [, fieldClass = '', value] = duplicate;
  const sunday = fieldClass === 'DayOfWeek' && value === '0' ? ' (0 and 7 are both Sunday)' : '';
  return `${FIELD_LABELS[fieldClass] ?? fieldClass} field lists ${value} more than once${sunday}`;
}

// The Quartz items never reach cron-parser, so every value it returns is a number.
function numbers(field: CronField): number[] {
  return Array.from(field.values, Number);
}

function normalizeFields(fields: Omit<CronFields, 'normalized'>): string {
  const [second, minute, , dayOfMonth, month] = FIELD_SPECS;
  const quartz = hasQuartzDays(fields.quartz);
  const rendered = [
    renderValues(fields.seconds, second!),
    renderValues(fields.minutes, minute!),
    fields.followsRealClock ? renderClockHour(fields.hours) : renderList(fields.hours),
    fields.anyDayOfMonth
      ? '*'
      : renderDayField(fields.daysOfMonth, dayOfMonth!, quartz ? renderQuartzItems(fields.quartz, 'day-of-month') : []),
    renderValues(fields.months, month!),
    // Sunday is folded to 0 by now, so the week ends at 6.
    fields.anyDayOfWeek
      ? '*'
      : renderDayField(
          fields.daysOfWeek,
          { min: 0, max: 6 },
          quartz ? renderQuartzItems(fields.quartz, 'day-of-week') : [],
        ),
  ];
  if (fields.years !== null) rendered.push(renderValues(fields.years, YEAR_SPEC));
  return rendered.join(' ');
}

/** A restricted day field: its plain values as {@link renderValues} writes them, then its Quartz items. */
function renderDayField(values: readonly number[], range: { min: number; max: number }, quartz: string[]): string {
  if (quartz.length === 0) return renderValues(values, range);
  // With Quartz items the plain values are a subset, never `*` or a step from the minimum alone.
  return [...(values.length === 0 ? [] : [renderList(values)]), ...quartz].join(',');
}

/** `*` for every value, a step from the minimum for a full progression, else a compact list. */
function renderValues(values: readonly number[], range: { min: number; max: number }): string {
  if (values.length === range.max - range.min + 1) return '*';
  const step = (values[1] ?? 0) - (values[0] ?? 0);
  const isFullStep =
    values.length >= 3 &&
    values[0] === range.min &&
    values.every((value, index) => value === range.min + index * step) &&
    values.at(-1)! + step > range.max;
  return isFullStep ? `*/${step}` : renderList(values);
}

// A `*` hour is `*` or a step of it, so its values start at 0 with a constant step; steps of
// 24 or more leave only midnight, and all of them are written `*/24`.
function renderClockHour(values: readonly number[]): string {
  if (values.length === 24) return '*';
  return `*/${values.length === 1 ? 24 : values[1]! - values[0]!}`;
}

/** Sorted values with runs of three or more written as ranges: `1-5,7,9`. */
function renderList(values: readonly number[]): string {
  const parts: string[] = [];
  let runStart = 0;
  for (let index = 1; index <= values.length; index += 1) {
    if (index < values.length && values[index] === values[index - 1]! + 1) continue;
    const run = values.slice(runStart, index);
    parts.push(run.length >= 3 ? `${run[0]}-${run.at(-1)}` : run.join(','));
    runStart = index;
  }
  return parts.join(',');
}
