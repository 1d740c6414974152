import { ValidationError } from '@orreryjs/core';
import { IANAZone } from 'luxon';
import { type CronFields, parseCronFields } from './cron-expression.js';
import { compileMatcher, type DstRules, type LocalMatcher, nextInstant, resolveDstRules } from './local-time.js';
import { DST_GAP_CHOICES, DST_REPEATED_CHOICES } from './schedule-fields.js';
import { validateTimezone } from './timezone.js';

/**
 * A validated cron expression bound to a zone, ready to be walked many times without
 * reparsing: the scheduler keeps one per schedule and calls {@link ParsedCron.next}.
 *
 * Occurrences follow Orrery's DST rules. When the hour field is fixed (`30 2 * * *`), a wall
 * time inside a spring-forward gap fires once, read with the offset before the gap (02:30
 * becomes 03:30 in New York), and a wall time repeated at fall-back fires once, at its first
 * instance. When the hour field starts with `*` (`0 * * * *`, or `*` with a step), occurrences
 * follow the real clock: the repeated hour fires again and the missing hour never fires.
 * Occurrences are distinct instants: `0 2,3 * * *` fires once at 03:00 on a spring-forward day.
 */
export interface ParsedCron {
  /** The expression as given. */
  readonly expression: string;
  /** Canonical 6-field text, see {@link normalizeCronExpression}. */
  readonly normalized: string;
  /** Whether the expression was written with a seconds field (6 fields). */
  readonly hasSeconds: boolean;
  /** Canonical IANA zone name the wall times are read in, see {@link validateTimezone}. */
  readonly timezone: string;
  /** The DST rules in force: the defaults for the expression, overridden by the `dst` given. */
  readonly dst: { readonly repeated: 'first' | 'last' | 'both'; readonly gap: 'shift' | 'skip' };
  /**
   * The first occurrence strictly after `after`, or null when none falls within the next
   * nine years: a bound so that the search always ends, and longer than the longest gap a
   * valid expression can have (February 29: 2096, then 2104).
   * @throws ValidationError when `after` is an invalid Date.
   */
  next(after: Date): Date | null;
}

/** Options of {@link nextOccurrences}. */
export interface NextOccurrencesOptions {
  /**
   * IANA zone whose wall clock the expression is read in.
   * @default 'UTC'
   */
  timezone?: string;
  /**
   * Occurrences are strictly after this instant.
   * @default new Date() (now)
   */
  after?: Date;
  /**
   * How many occurrences to return.
   * @default 1
   */
  count?: number;
  /**
   * Overrides the DST rules: `repeated` fires a wall time repeated at fall-back at its
   * `first` instance, its `last` or `both`; `gap` `shift`s a wall time inside a
   * spring-forward gap to the offset before the gap, or `skip`s it that day. A missing field
   * keeps the expression's default rule.
   * @default the rules of {@link ParsedCron}
   */
  dst?: DstRules;
}

/** Options of {@link occurrencesBetween}. */
export interface OccurrencesBetweenOptions {
  /**
   * IANA zone whose wall clock the expression is read in.
   * @default 'UTC'
   */
  timezone?: string;
  /** First instant of the range, included. */
  start: Date;
  /** End of the range, excluded. */
  end: Date;
  /**
   * At most this many occurrences, the earliest ones; unlimited when omitted.
   * @default Infinity
   */
  limit?: number;
  /**
   * Overrides the DST rules: `repeated` fires a wall time repeated at fall-back at its
   * `first` instance, its `last` or `both`; `gap` `shift`s a wall time inside a
   * spring-forward gap to the offset before the gap, or `skip`s it that day. A missing field
   * keeps the expression's default rule.
   * @default the rules of {@link ParsedCron}
   */
  dst?: DstRules;
}

// Parsing costs ~40 µs (cron-parser builds dates); a scheduler with 100,000 schedules would
// otherwise spend seconds per pass. Safe to share: a ParsedCron never changes.
const parsedCache = new Map<string, ParsedCron>();
const PARSED_CACHE_LIMIT = 10_000;

/**
 * Parses and validates `expression` for `timezone` once, returning an immutable object whose
 * `next()` walks occurrences cheaply (see {@link ParsedCron} for the DST rules). Results are
 * memoised, so parsing the same pair again, as a scheduler does for every due schedule, is
 * a map lookup.
 *
 * Accepted: 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first;
 * values, ranges `a-b`, lists `a,b`, steps `a/n`, `a-b/n` and `*` with `/n`; month and day
 * names (`JAN`-`DEC`, `SUN`-`SAT`, any case); 7 as Sunday; the macros `@yearly` `@annually`
 * `@monthly` `@weekly` `@daily` `@midnight` `@hourly` (any case). Refused: other field counts,
 * other macros, `*` inside a list, a day-of-month no allowed month has (`0 0 30 2 *`),
 * duplicate values, and the Quartz/Jenkins extensions `L`, `W`, `#`, `?` and `H`, so every
 * accepted expression means the same to classic cron. When both day fields are restricted
 * (not `*`), a day matching either fires, as in cron.
 * `dst` overrides the DST rules, as {@link NextOccurrencesOptions.dst} describes.
 * @throws InvalidCronExpressionError naming the expression and the field at fault.
 * @throws InvalidTimezoneError when `timezone` is not an IANA zone name.
 * @throws ValidationError when `dst` has a field other than `repeated` and `gap` or a value not listed there.
 */
export function parseCronExpression(expression: string, timezone = 'UTC', dst?: DstRules | null): ParsedCron {
  checkDst(dst);
  const key = `${timezone}\n${expression}\n${dst?.repeated ?? ''}\n${dst?.gap ?? ''}`;
  let parsed = parsedCache.get(key);
  if (parsed === undefined) {
    parsed = new CompiledCron(expression, parseCronFields(expression), validateTimezone(timezone), dst);
    if (parsedCache.size >= PARSED_CACHE_LIMIT) parsedCache.clear();
    parsedCache.set(key, parsed);
  }
  return parsed;
}

/**
 * The next `count` occurrences of `expression` strictly after `after`, as UTC instants in
 * ascending order, by the syntax and DST rules of {@link parseCronExpression}.
 * @throws InvalidCronExpressionError naming the expression and the field at fault.
 * @throws InvalidTimezoneError when `timezone` is not an IANA zone name.
 * @throws ValidationError when `count` is not a non-negative integer or `after` is invalid.
 */
export function nextOccurrences(expression: string, options: NextOccurrencesOptions = {}): Date[] {
  const { timezone, after = new Date(), count = 1, dst } = options;
  checkCount('count', count);
  const parsed = parseCronExpression(expression, timezone, dst);
  const occurrences: Date[] = [];
  let cursor = after;
  while (occurrences.length < count) {
    const next = parsed.next(cursor);
    if (next === null) break;
    occurrences.push(next);
    cursor = next;
  }
  return occurrences;
}

/**
 * The occurrences of `expression` in the half-open range [`start`, `end`), ascending, at
 * most `limit` of them (the earliest), by the syntax and DST rules of
 * {@link parseCronExpression}. Used for backfills and previews.
 * @throws InvalidCronExpressionError naming the expression and the field at fault.
 * @throws InvalidTimezoneError when `timezone` is not an IANA zone name.
 * @throws ValidationError when `limit` is not a non-negative integer or a date is invalid.
 */
export function occurrencesBetween(expression: string, options: OccurrencesBetweenOptions): Date[] {
  const { timezone, start, end, limit = Number.POSITIVE_INFINITY, dst } = options;
  if (limit !== Number.POSITIVE_INFINITY) checkCount('limit', limit);
  checkDate('start', start);
  checkDate('end', end);
  const parsed = parseCronExpression(expression, timezone, dst);
  const occurrences: Date[] = [];
  // `next` is strictly after its argument, so begin 1 ms early to include `start` itself.
  let cursor = parsed.next(new Date(start.getTime() - 1));
  while (cursor !== null && cursor < end && occurrences.length < limit) {
    occurrences.push(cursor);
    cursor = parsed.next(cursor);
  }
  return occurrences;
}

class CompiledCron implements ParsedCron {
  readonly expression: string;
  readonly normalized: string;
  readonly hasSeconds: boolean;
  readonly timezone: string;
  readonly dst: { readonly repeated: 'first' | 'last' | 'both'; readonly gap: 'shift' | 'skip' };
  readonly #matcher: LocalMatcher;
  readonly #zone: IANAZone;

  constructor(expression: string, fields: CronFields, timezone: string, dst: DstRules | null | undefined) {
    this.expression = expression;
    this.normalized = fields.normalized;
    this.hasSeconds = fields.hasSeconds;
    this.timezone = timezone;
    this.dst = resolveDstRules(fields.followsRealClock, dst);
    this.#matcher = compileMatcher(fields, dst);
    this.#zone = IANAZone.create(timezone);
  }

  next(after: Date): Date | null {
    checkDate('after', after);
    const instant = nextInstant(this.#matcher, this.#zone, after.getTime());
    return instant === null ? null : new Date(instant);
  }
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

function checkCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError(`${name} must be a non-negative integer, got ${value}`);
  }
}

function checkDate(name: string, value: Date): void {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new ValidationError(`${name} must be a valid Date, got ${String(value)}`);
  }
}
