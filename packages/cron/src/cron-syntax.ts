import { InvalidCronExpressionError } from '@orreryjs/core';

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

const MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 0 1 1 *',
  '@annually': '0 0 0 1 1 *',
  '@monthly': '0 0 0 1 * *',
  '@weekly': '0 0 0 * * 0',
  '@daily': '0 0 0 * * *',
  '@midnight': '0 0 0 * * *',
  '@hourly': '0 0 * * * *',
};

// Quartz and Jenkins extensions that cron-parser would accept but that we refuse, so that
// every accepted expression means the same thing to classic cron and to Orrery.
const UNSUPPORTED = /^(\?|L|LW|\d*L|\d+W|\d+#\d+|H.*)$/i;

/** An expression split into its six written fields, before cron-parser expands them. */
export interface CronSyntax {
  /** Second, minute, hour, day-of-month, month and day-of-week, as written (macros expanded). */
  readonly fields: readonly string[];
  /** Whether the expression was written with a seconds field (6 fields). */
  readonly hasSeconds: boolean;
}

/**
 * Splits an expression into six fields and checks each one's syntax and ranges, so that the
 * error names the field at fault, which cron-parser's messages do not.
 * @throws InvalidCronExpressionError for anything but 5 or 6 well-formed fields or a known macro.
 */
export function readCronSyntax(expression: string): CronSyntax {
  // Expressions also arrive from JSON and untyped callers.
  if (typeof expression !== 'string') throw invalid(String(expression), `expected a string, got ${typeof expression}`);
  const text = expression.trim();
  if (text === '') throw invalid(expression, 'the expression is empty');
  if (text.startsWith('@')) return { fields: expandMacro(expression, text), hasSeconds: false };
  const written = text.split(/\s+/);
  if (written.length !== 5 && written.length !== 6) {
    throw invalid(
      expression,
      `expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got ${written.length}`,
    );
  }
  const fields = written.length === 5 ? ['0', ...written] : written;
  fields.forEach((field, index) => {
    checkField(expression, FIELD_SPECS[index]!, field);
  });
  return { fields, hasSeconds: written.length === 6 };
}

/** Builds the error every syntax check throws: the expression first, then what is wrong. */
export function invalid(expression: string, reason: string, cause?: unknown): InvalidCronExpressionError {
  return new InvalidCronExpressionError(`Invalid cron expression "${expression}": ${reason}`, { cause });
}

function expandMacro(expression: string, text: string): string[] {
  const expansion = MACROS[text.toLowerCase()];
  if (expansion === undefined) {
    throw invalid(expression, `unknown macro; use one of ${Object.keys(MACROS).join(' ')}`);
  }
  return expansion.split(' ');
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
  if (UNSUPPORTED.test(text)) {
    throw invalid(
      expression,
      `${spec.label} field value ${text} is not supported; L, W, #, ? and H are not cron syntax`,
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
