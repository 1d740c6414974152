import { CronExpressionParser, type CronField } from 'cron-parser';
import { FIELD_SPECS, invalid, readCronSyntax } from './cron-syntax.js';

/**
 * The sets of values a cron expression allows, expanded, plus the facts the DST rules and
 * the day-of-month/day-of-week rule depend on. Internal: callers use `ParsedCron`.
 */
export interface CronFields {
  readonly seconds: readonly number[];
  readonly minutes: readonly number[];
  readonly hours: readonly number[];
  readonly daysOfMonth: readonly number[];
  readonly months: readonly number[];
  /** 0-6, Sunday = 0 (a written 7 is folded into 0). */
  readonly daysOfWeek: readonly number[];
  /** Day-of-month is unrestricted; when both day fields are restricted, a day matching either fires. */
  readonly anyDayOfMonth: boolean;
  /** Day-of-week is unrestricted. */
  readonly anyDayOfWeek: boolean;
  /** The hour field starts with `*`: occurrences follow the real clock across DST changes. */
  readonly followsRealClock: boolean;
  /** The expression was written with a seconds field. */
  readonly hasSeconds: boolean;
  /** Canonical 6-field text: expressions with the same text fire at the same instants. */
  readonly normalized: string;
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
  const expanded = expandWithCronParser(expression, syntax.fields);
  const daysOfWeek = [...new Set(expanded.dayOfWeek.map((day) => day % 7))].sort((a, b) => a - b);
  const everyDay =
    (dayOfMonthText !== '*' && expanded.dayOfMonth.length === 31) || (dayOfWeekText !== '*' && daysOfWeek.length === 7);
  const fields = {
    seconds: expanded.second,
    minutes: expanded.minute,
    hours: expanded.hour,
    daysOfMonth: expanded.dayOfMonth,
    months: expanded.month,
    daysOfWeek,
    anyDayOfMonth: everyDay || dayOfMonthText === '*',
    anyDayOfWeek: everyDay || dayOfWeekText === '*',
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
 * because the DST rules treat the two differently.
 * @throws InvalidCronExpressionError naming the expression and the field at fault.
 */
export function normalizeCronExpression(expression: string): string {
  return parseCronFields(expression).normalized;
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

// Our syntax check refuses `L`, so every value cron-parser returns is a number.
function numbers(field: CronField): number[] {
  return Array.from(field.values, Number);
}

function normalizeFields(fields: Omit<CronFields, 'normalized'>): string {
  const [second, minute, , dayOfMonth, month] = FIELD_SPECS;
  return [
    renderValues(fields.seconds, second!),
    renderValues(fields.minutes, minute!),
    fields.followsRealClock ? renderClockHour(fields.hours) : renderList(fields.hours),
    fields.anyDayOfMonth ? '*' : renderValues(fields.daysOfMonth, dayOfMonth!),
    renderValues(fields.months, month!),
    // Sunday is folded to 0 by now, so the week ends at 6.
    fields.anyDayOfWeek ? '*' : renderValues(fields.daysOfWeek, { min: 0, max: 6 }),
  ].join(' ');
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
