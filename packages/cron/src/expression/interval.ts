import { invalid } from './cron-syntax.js';

/** The units of an `@every` duration, largest first, in the order they must be written. */
const UNITS: readonly (readonly [unit: string, ms: number])[] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
  ['ms', 1],
];

/** The bounds of an `@every` interval: at least a second, at most a leap year. */
export const INTERVAL_LIMITS: Readonly<{ minMs: number; maxMs: number }> = {
  minMs: 1000,
  maxMs: 366 * 86_400_000,
};

const EVERY = /^@every(?:\s+(.*))?$/i;

/** True when the expression is an `@every` interval (well-formed or not). */
export function isIntervalExpression(text: string): boolean {
  return EVERY.test(text.trim());
}

/**
 * Reads `@every <duration>` (`@every 90s`, `@every 1h30m`): whole numbers with the units d,
 * h, m, s and ms, largest first, each at most once, no spaces inside; at least 1 s and at
 * most 366 d. Returns the interval in milliseconds.
 * @throws InvalidCronExpressionError saying what is wrong and how to write it.
 */
export function readInterval(expression: string): number {
  const duration = EVERY.exec(expression.trim())?.[1]?.trim() ?? '';
  const example = 'write @every followed by a duration such as 90s, 5m or 1h30m (units d, h, m, s, ms, largest first)';
  if (duration === '') throw invalid(expression, `@every needs a duration; ${example}`);
  const parts = [...duration.matchAll(/(\d+)(ms|d|h|m|s)/g)];
  if (parts.map((part) => part[0]).join('') !== duration) {
    throw invalid(expression, `the duration "${duration}" is malformed; ${example}`);
  }
  let everyMs = 0;
  let previousUnit = -1;
  for (const [, amount, unit] of parts) {
    const index = UNITS.findIndex(([name]) => name === unit);
    if (index <= previousUnit) {
      throw invalid(expression, `the duration "${duration}" repeats or misorders its units; ${example}`);
    }
    previousUnit = index;
    everyMs += Number(amount) * UNITS[index]![1];
  }
  if (everyMs < INTERVAL_LIMITS.minMs || everyMs > INTERVAL_LIMITS.maxMs) {
    throw invalid(
      expression,
      `the interval ${duration} is outside 1s-366d; use an interval of at least 1s and at most 366d (or a cron expression)`,
    );
  }
  return everyMs;
}

/** The canonical text of an interval: `@every` and its duration in the largest units, `@every 1h30m`. */
export function renderInterval(everyMs: number): string {
  let rest = everyMs;
  let text = '';
  for (const [unit, ms] of UNITS) {
    const amount = Math.floor(rest / ms);
    if (amount > 0) text += `${amount}${unit}`;
    rest -= amount * ms;
  }
  return `@every ${text}`;
}

/**
 * The first instant `anchorMs + k·everyMs` (k any integer) strictly after `afterMs`: intervals
 * are absolute, so the zone and its DST changes never move them.
 */
export function nextIntervalInstant(everyMs: number, anchorMs: number, afterMs: number): number {
  return anchorMs + (Math.floor((afterMs - anchorMs) / everyMs) + 1) * everyMs;
}
