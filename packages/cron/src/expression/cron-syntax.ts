import { InvalidCronExpressionError } from '@orreryjs/core';
import { type DayField, isQuartzDayItem, type QuartzDays, type QuartzItem, readQuartzItem } from './quartz-days.js';

/** The bounds and names of one field of a 6-field cron expression. */
export interface FieldSpec {
  /** Name used in error messages. */
  readonly label: string;
  readonly min: number;
  readonly max: number;
  /** Three-letter names, indexed from `min`; only the month and day-of-week fields have them. */
  readonly names?: readonly string[];
}

/** The six fields in written order; day-of-week accepts 7 as a second Sunday, like cron. */
export const FIELD_SPECS: readonly FieldSpec[] = [
  { label: 'second', min: 0, max: 59 },
  { label: 'minute', min: 0, max: 59 },
  { label: 'hour', min: 0, max: 23 },
  { label: 'day-of-month', min: 1, max: 31 },
  {
    label: 'month',
    min: 1,
    max: 12,
    names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
  },
  { label: 'day-of-week', min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
];

/** The optional seventh field: the years an expression may fire in (local calendar years). */
export const YEAR_SPEC: FieldSpec = { label: 'year', min: 1970, max: 2199 };

const MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 0 1 1 *',
  '@annually': '0 0 0 1 1 *',
  '@monthly': '0 0 0 1 * *',
  '@weekly': '0 0 0 * * 0',
  '@daily': '0 0 0 * * *',
  '@midnight': '0 0 0 * * *',
  '@hourly': '0 0 * * * *',
};

// Jenkins' hash (`H`) would make an expression's instants depend on a job name we do not have.
const HASHED = /^H/i;
const DAY_OF_MONTH = 3;
const DAY_OF_WEEK = 5;

/** An expression split into its written fields, before cron-parser expands them. */
export interface CronSyntax {
  /**
   * Second, minute, hour, day-of-month, month and day-of-week, as cron-parser reads them
   * (macros expanded): a day field keeps its plain values only, `*` when it has none (its
   * Quartz items are in `quartz`), and `?` is written `*`.
   */
  readonly fields: readonly string[];
  /** Whether the expression was written with a seconds field (6 or 7 fields). */
  readonly hasSeconds: boolean;
  /** The year field as written, or null without one (every year). */
  readonly year: string | null;
  /** The Quartz day items (`L`, `L-3`, `15W`, `LW`, `5#3`, `5L`) of the day fields. */
  readonly quartz: QuartzDays;
  /** Day-of-month was written `*` or `?`. */
  readonly anyDayOfMonth: boolean;
  /** Day-of-week was written `*` or `?`. */
  readonly anyDayOfWeek: boolean;
}

/**
 * Splits an expression into its fields and checks each one's syntax and ranges, so that the
 * error names the field at fault, which cron-parser's messages do not.
 * @throws InvalidCronExpressionError for anything but 5, 6 or 7 well-formed fields or a known macro.
 */
export function readCronSyntax(expression: string): CronSyntax {
  // Expressions also arrive from JSON and untyped callers.
  if (typeof expression !== 'string') throw invalid(String(expression), `expected a string, got ${typeof expression}`);
  const text = expression.trim();
  if (text === '') throw invalid(expression, 'the expression is empty');
  const written = text.startsWith('@') ? expandMacro(expression, text) : text.split(/\s+/);
  if (written.length < 5 || written.length > 7) {
    throw invalid(
      expression,
      `expected 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or 7 with seconds first and a year last, got ${written.length}`,
    );
  }
  const fields = written.length === 5 ? ['0', ...written] : written.slice(0, 6);
  const year = written.length === 7 ? written[6]! : null;
  const days = readQuartzDays(expression, fields[DAY_OF_MONTH]!, fields[DAY_OF_WEEK]!);
  fields[DAY_OF_MONTH] = days.dayOfMonth;
  fields[DAY_OF_WEEK] = days.dayOfWeek;
  fields.forEach((field, index) => {
    checkField(expression, FIELD_SPECS[index]!, field);
  });
  if (year !== null) checkField(expression, YEAR_SPEC, year);
  return {
    fields,
    hasSeconds: written.length >= 6 && !text.startsWith('@'),
    year,
    quartz: days.quartz,
    anyDayOfMonth: days.anyDayOfMonth,
    anyDayOfWeek: days.anyDayOfWeek,
  };
}

/** Builds the error every syntax check throws: the expression first, then what is wrong. */
export function invalid(expression: string, reason: string, cause?: unknown): InvalidCronExpressionError {
  return new InvalidCronExpressionError(`Invalid cron expression "${expression}": ${reason}`, { cause });
}

function expandMacro(expression: string, text: string): string[] {
  const expansion = MACROS[text.toLowerCase()];
  if (expansion === undefined) {
    throw invalid(expression, `unknown macro; use one of ${Object.keys(MACROS).join(' ')} or @every <duration>`);
  }
  return expansion.split(' ');
}

/**
 * Takes the Quartz items out of the two day fields (the rest goes to cron-parser as before)
 * and reads `?` as `*`.
 */
function readQuartzDays(
  expression: string,
  dayOfMonthText: string,
  dayOfWeekText: string,
): { dayOfMonth: string; dayOfWeek: string; quartz: QuartzDays; anyDayOfMonth: boolean; anyDayOfWeek: boolean } {
  const dayOfMonth = splitDayField(expression, FIELD_SPECS[DAY_OF_MONTH]!, dayOfMonthText);
  const dayOfWeek = splitDayField(expression, FIELD_SPECS[DAY_OF_WEEK]!, dayOfWeekText);
  const weekday = (text: string) => readValue(expression, FIELD_SPECS[DAY_OF_WEEK]!, text) % 7;
  const pick = <K extends QuartzItem['kind']>(
    field: { text: string; items: QuartzItem[] },
    kind: K,
    value: (item: Extract<QuartzItem, { kind: K }>) => number,
  ) =>
    distinct(
      expression,
      field.text,
      field.items.flatMap((item) => (item.kind === kind ? [value(item as Extract<QuartzItem, { kind: K }>)] : [])),
    );
  const monthDays = { text: dayOfMonthText, items: dayOfMonth.items };
  const weekDays = { text: dayOfWeekText, items: dayOfWeek.items };
  const quartz: QuartzDays = {
    lastDayOffsets: pick(monthDays, 'lastDay', (item) => item.offset),
    nearestWeekdays: pick(monthDays, 'nearestWeekday', (item) => item.day),
    lastWeekday: pick(monthDays, 'lastWeekday', () => 1).length > 0,
    nthWeekdays: pick(weekDays, 'nth', (item) => weekday(item.weekday) * 8 + item.nth),
    lastWeekdays: pick(weekDays, 'lastOfWeekday', (item) => weekday(item.weekday)),
  };
  return {
    dayOfMonth: dayOfMonth.plain,
    dayOfWeek: dayOfWeek.plain,
    quartz,
    anyDayOfMonth: dayOfMonth.any,
    anyDayOfWeek: dayOfWeek.any,
  };
}

/** One day field's plain items (`*` when none: its Quartz items restrict it) and its Quartz items. */
function splitDayField(
  expression: string,
  spec: FieldSpec,
  field: string,
): { plain: string; items: QuartzItem[]; any: boolean } {
  if (field === '?' || field === '*') return { plain: '*', items: [], any: true };
  const label = spec.label as DayField;
  const plain: string[] = [];
  const items: QuartzItem[] = [];
  for (const item of field.split(',')) {
    const quartz = readQuartzItem(label, item);
    if (typeof quartz === 'string') throw invalid(expression, `${label} field "${field}": ${quartz}`);
    if (quartz === null) plain.push(item);
    else items.push(quartz);
  }
  if (items.length === 0) return { plain: field, items, any: false };
  return { plain: plain.length === 0 ? '*' : plain.join(','), items, any: false };
}

/** The values sorted, refusing a Quartz item listed twice as cron-parser refuses a plain one. */
function distinct(expression: string, field: string, values: number[]): number[] {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.some((value, index) => index > 0 && value === sorted[index - 1])) {
    throw invalid(expression, `field "${field}" lists the same Quartz day rule more than once`);
  }
  return sorted;
}

function checkField(expression: string, spec: FieldSpec, field: string): void {
  if (/^\*(\/[^/]*)?$/.test(field)) {
    const step = field.split('/')[1];
    if (step !== undefined) checkStep(expression, spec, step);
    return;
  }
  for (const item of field.split(',')) checkItem(expression, spec, field, item);
}

function checkItem(expression: string, spec: FieldSpec, field: string, item: string): void {
  if (item.includes('*')) {
    throw invalid(expression, `${spec.label} field "${field}": '*' must stand alone, as '*' or '*/n'`);
  }
  const match = /^([^-/]+)(?:-([^-/]+))?(?:\/([^/]*))?$/.exec(item);
  if (match === null) {
    throw invalid(
      expression,
      `${spec.label} field "${field}" is malformed; expected a value, a range a-b, a step a-b/n or */n, or a list of those`,
    );
  }
  const [, startText = '', endText, stepText] = match;
  const start = readValue(expression, spec, startText);
  const end = endText === undefined ? start : readValue(expression, spec, endText);
  if (start > end) {
    throw invalid(
      expression,
      `${spec.label} field range ${startText}-${endText} runs backwards; its start must come first`,
    );
  }
  if (stepText !== undefined) checkStep(expression, spec, stepText);
}

function readValue(expression: string, spec: FieldSpec, text: string): number {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    if (value < spec.min || value > spec.max) {
      throw invalid(expression, `${spec.label} field value ${text} is out of range ${spec.min}-${spec.max}`);
    }
    return value;
  }
  const index = spec.names?.indexOf(text.toUpperCase()) ?? -1;
  if (index >= 0) return index + spec.min;
  if (HASHED.test(text)) {
    throw invalid(
      expression,
      `${spec.label} field value ${text} is not supported: H (a hash of the job name) is Jenkins syntax; write the value itself`,
    );
  }
  if (text === '?' || isQuartzDayItem(text)) {
    throw invalid(
      expression,
      `${spec.label} field value ${text} is not supported here: ? L W and # are Quartz day rules, only for day-of-month (?, L, L-3, 15W, LW) and day-of-week (?, 5#3, 5L), alone or in a list`,
    );
  }
  const names = spec.names === undefined ? '' : ` or a name ${spec.names[0]}-${spec.names.at(-1)}`;
  throw invalid(expression, `${spec.label} field value ${text} is not a number ${spec.min}-${spec.max}${names}`);
}

function checkStep(expression: string, spec: FieldSpec, text: string): void {
  if (!/^\d+$/.test(text) || Number(text) < 1) {
    throw invalid(expression, `${spec.label} field step "${text}" must be a whole number of at least 1`);
  }
  // A step as long as the cycle (`*/60` minutes) still means "every n"; a longer one fires
  // once per cycle, not every n (`*/90` minutes is hourly). Day-of-week's 7 is a second Sunday.
  const max = spec.label === 'day-of-week' ? 6 : spec.max;
  const count = max - spec.min + 1;
  if (Number(text) > count) {
    throw invalid(
      expression,
      `${spec.label} field step ${text} is longer than the field's ${count} values ${spec.min}-${max}, so it would fire once per cycle, not every ${text}; use a step of at most ${count}, or a list of values`,
    );
  }
}
