import type { Json } from '@orreryjs/core';
import { DST_GAP_CHOICES, DST_REPEATED_CHOICES, type DstRules } from '@orreryjs/cron';
import { InvalidArgumentError } from 'commander';

// Parsers for option and argument values. Each throws commander's InvalidArgumentError, so a
// bad value is reported as a usage error (one line, exit code 2) before any database is opened.

/** A whole number ≥ `min`. */
export function integerAtLeast(min: number): (value: string) => number {
  return wholeNumber(min, Number.MAX_SAFE_INTEGER, `expected a whole number of at least ${min}.`);
}

/**
 * A whole number from `min` to `max`, for a count whose cost grows with it; `instead` says
 * what to do rather than ask for more than `max`.
 */
export function integerBetween(min: number, max: number, instead: string): (value: string) => number {
  return wholeNumber(min, max, `expected a whole number from ${min} to ${max}: ${instead}`);
}

function wholeNumber(min: number, max: number, expected: string): (value: string) => number {
  return (value) => {
    const parsed = Number(value);
    if (value.trim() === '' || !Number.isSafeInteger(parsed) || parsed < min || parsed > max) {
      throw new InvalidArgumentError(expected);
    }
    return parsed;
  };
}

/** What the cron-expression arguments (`schedules add`, `next`) accept, for their help. */
export const CRON_ARGUMENT_HELP =
  'cron expression: 5 fields, 6 with seconds first, or 7 with a year last; Quartz L W # ?; @daily, @hourly, ...; @every 90s, @every 1h30m';

/**
 * An instant written in ISO-8601 (`2024-05-01`, `2024-05-01T02:00:00Z`). Without an offset it
 * is UTC, whatever the host's zone: a date alone is UTC midnight, `2024-05-01T09:00` is 09:00 UTC.
 */
export function parseInstant(value: string): Date {
  const ISO = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?)(Z|[+-]\d{2}:?\d{2})?)?$/i;
  const match = ISO.exec(value.trim());
  // JavaScript reads a date-time without an offset in the host's zone; say UTC explicitly.
  const parsed =
    match === null ? new Date(Number.NaN) : new Date(`${match[1]}T${match[2] ?? '00:00'}${match[3] ?? 'Z'}`);
  if (Number.isNaN(parsed.getTime())) {
    throw new InvalidArgumentError('expected an ISO-8601 instant such as 2024-05-01T02:00:00Z.');
  }
  return parsed;
}

const DURATION_UNITS_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A TCP port, 0 to 65535 (0: the system picks a free one). */
export function parsePort(value: string): number {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isInteger(parsed) || parsed < 0 || parsed > 65_535) {
    throw new InvalidArgumentError('expected a port number from 0 to 65535 (0 picks a free port).');
  }
  return parsed;
}

/**
 * The longest duration the command line takes: 100 years. Longer ones are typing errors, and
 * would make instants (`stats --since 99999999999d`) no Date or database can hold.
 */
const MAX_DURATION_DAYS = 36_500;

/** A duration such as `90s`, `15m`, `24h` or `7d`, in milliseconds; at most {@link MAX_DURATION_DAYS} days. */
export function parseDurationMs(value: string): number {
  const match = /^(\d+)(s|m|h|d)$/.exec(value.trim());
  if (match === null) throw new InvalidArgumentError('expected a duration such as 90s, 15m, 24h or 7d.');
  const ms = Number(match[1]) * DURATION_UNITS_MS[match[2]!]!;
  if (ms > MAX_DURATION_DAYS * DURATION_UNITS_MS.d!) {
    throw new InvalidArgumentError(
      `expected a duration of at most ${MAX_DURATION_DAYS}d (100 years), not ${value.trim()}.`,
    );
  }
  return ms;
}

/** A JSON object, as a schedule's input context. */
export function parseJsonObject(value: string): Record<string, Json> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidArgumentError(`expected a JSON object such as '{"region":"eu"}'.`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidArgumentError(`expected a JSON object such as '{"region":"eu"}', not ${describe(parsed)}.`);
  }
  return parsed as Record<string, Json>;
}

/** Any JSON value, as a signal's payload; the parser's complaint says where it went wrong. */
export function parseJson(value: string): Json {
  try {
    return JSON.parse(value) as Json;
  } catch (error) {
    const why = (error instanceof Error ? error.message : String(error)).replace(/\.$/, '');
    throw new InvalidArgumentError(
      `expected JSON such as '{"by":"ada"}' (quoted for the shell), but it does not parse: ${why}.`,
    );
  }
}

/** One of `choices`. */
export function oneOf<T extends string>(choices: readonly T[]): (value: string) => T {
  return (value) => {
    if (!(choices as readonly string[]).includes(value)) {
      throw new InvalidArgumentError(`expected one of ${choices.join(', ')}.`);
    }
    return value as T;
  };
}

const DST_RULE_CHOICES: Readonly<Record<keyof DstRules, readonly string[]>> = {
  repeated: DST_REPEATED_CHOICES,
  gap: DST_GAP_CHOICES,
};

/**
 * A schedule's DST choices: `repeated=<choice>` and/or `gap=<choice>`, comma-separated
 * (`repeated=last,gap=skip`). A rule left out keeps the expression's default.
 */
export function parseDstRules(value: string): DstRules {
  const usage = `expected ${Object.entries(DST_RULE_CHOICES)
    .map(([rule, choices]) => `${rule}=${choices.join('|')}`)
    .join(' and/or ')}, comma-separated, such as repeated=last,gap=skip`;
  const rules: Record<string, string> = {};
  for (const part of value.split(',')) {
    const text = part.trim();
    const [rule = '', choice = '', ...rest] = text.split('=');
    const choices = Object.hasOwn(DST_RULE_CHOICES, rule) ? DST_RULE_CHOICES[rule as keyof DstRules] : undefined;
    if (choices === undefined || !choices.includes(choice) || rest.length > 0) {
      throw new InvalidArgumentError(`${usage}, not "${text}".`);
    }
    if (Object.hasOwn(rules, rule)) throw new InvalidArgumentError(`${usage}; ${rule} is given twice.`);
    rules[rule] = choice;
  }
  return rules as DstRules;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
