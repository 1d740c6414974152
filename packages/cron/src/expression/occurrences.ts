import { ValidationError } from '@orreryjs/core';
import { IANAZone } from 'luxon';
import { type CronFields, parseExpressionFields } from './cron-expression.js';
import { checkDst, type DstGap, type DstRepeated, type DstRules, resolveDstRules } from './dst.js';
import { nextIntervalInstant } from './interval.js';
import { compileMatcher, type LocalMatcher, nextInstant } from './local-time.js';
import { ParseCache } from './memo.js';
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
  /** Canonical text (6 fields, 7 with a year, or `@every …`), see {@link normalizeCronExpression}. */
  readonly normalized: string;
  /** Whether the expression was written with a seconds field (6 or 7 fields), or is an interval of other than whole minutes. */
  readonly hasSeconds: boolean;
  /** Canonical IANA zone name the wall times are read in, see {@link validateTimezone}. */
  readonly timezone: string;
  /**
   * The DST rules in force: the defaults for the expression, overridden by the `dst` given.
   * An `@every` interval follows the real clock and ignores `dst`.
   */
  readonly dst: { readonly repeated: DstRepeated; readonly gap: DstGap };
  /**
   * The first occurrence strictly after `after`, or null when none falls within the next
   * nine years: a bound so that the search always ends, and longer than the longest gap a
   * valid expression can have (February 29: 2096, then 2104). With a year field the search
   * runs to the end of the last allowed year instead, so a one-off whose year has passed
   * gives null.
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
   * The anchor of an `@every` interval, whose occurrences are the instants `anchor + k·every`
   * (k any integer): pass the schedule's `startAt`. Calendar expressions ignore it.
   * @default new Date(0) (the Unix epoch: `@every 5m` fires at :00, :05, … UTC)
   */
  anchor?: Date;
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
   * The anchor of an `@every` interval, whose occurrences are the instants `anchor + k·every`
   * (k any integer): pass the schedule's `startAt`. Calendar expressions ignore it.
   * @default new Date(0) (the Unix epoch: `@every 5m` fires at :00, :05, … UTC)
   */
  anchor?: Date;
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
const parsedCache = new ParseCache<ParsedCron>();

/**
 * Parses and validates `expression` for `timezone` once, returning an immutable object whose
 * `next()` walks occurrences cheaply (see {@link ParsedCron} for the DST rules). Results are
 * memoised, so parsing the same pair again, as a scheduler does for every due schedule, is
 * a map lookup.
 *
 * Accepted: 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or
 * 7 with seconds first and a year last (1970-2199); values, ranges `a-b`, lists `a,b`, steps
 * `a/n`, `a-b/n` and `*` with `/n`; month and day names (`JAN`-`DEC`, `SUN`-`SAT`, any
 * case); 7 as Sunday; the macros `@yearly` `@annually` `@monthly` `@weekly` `@daily`
 * `@midnight` `@hourly` (any case); Quartz's day rules as list items of the day fields: `L`
 * (last day of the month), `L-n` (n days before it), `nW` (the weekday nearest day n,
 * within the month), `LW` (the last weekday), `d#k` (the k-th weekday d: `5#3`, `MON#1`),
 * `dL` (the last weekday d: `5L`) and `?` for `*`, with cron's day numbers (5 = Friday);
 * and `@every <duration>` (`@every 90s`, `@every 1h30m`: units d h m s ms, 1s-366d), whose
 * occurrences are the instants `anchor + k·every`, which DST never moves. Refused: other
 * field counts, other macros, `*` inside a list, a day-of-month no allowed month has
 * (`0 0 30 2 *`), duplicate values, and Jenkins' `H`. When both day fields are restricted
 * (not `*` or `?`), a day matching either fires, as in cron.
 * `dst` overrides the DST rules, as {@link NextOccurrencesOptions.dst} describes.
 * `anchor` is the instant an `@every` interval counts from (its schedule's `startAt`;
 * default the Unix epoch); calendar expressions ignore it.
 * @throws InvalidCronExpressionError naming the expression and the field at fault.
 * @throws InvalidTimezoneError when `timezone` is not an IANA zone name.
 * @throws ValidationError when `dst` has a field other than `repeated` and `gap` or a value
 * not listed there, or `anchor` is not a valid Date.
 */
export function parseCronExpression(
  expression: string,
  timezone = 'UTC',
  dst?: DstRules | null,
  anchor?: Date | null,
): ParsedCron {
  checkDst(dst);
  if (anchor !== undefined && anchor !== null) checkDate('anchor', anchor);
  // The anchor is not part of the key: every schedule has its own startAt, and the cache
  // would then hold one entry per schedule. An interval is re-anchored cheaply instead.
  const key = `${timezone}\n${expression}\n${dst?.repeated ?? ''}\n${dst?.gap ?? ''}`;
  const parsed = parsedCache.get(key, () => {
    const fields = parseExpressionFields(expression);
    const zone = validateTimezone(timezone);
    return fields.kind === 'interval'
      ? new IntervalCron(expression, fields.normalized, fields.everyMs, fields.hasSeconds, zone, 0)
      : new CompiledCron(expression, fields, zone, dst);
  });
  return parsed instanceof IntervalCron && anchor !== undefined && anchor !== null ? parsed.anchoredAt(anchor) : parsed;
}

/**
 * The next `count` occurrences of `expression` strictly after `after`, as UTC instants in
 * ascending order, by the syntax and DST rules of {@link parseCronExpression}.
 * @throws InvalidCronExpressionError naming the expression and the field at fault.
 * @throws InvalidTimezoneError when `timezone` is not an IANA zone name.
 * @throws ValidationError when `count` is not a non-negative integer or `after` is invalid.
 */
export function nextOccurrences(expression: string, options: NextOccurrencesOptions = {}): Date[] {
  const { timezone, after = new Date(), count = 1, dst, anchor } = options;
  checkCount('count', count);
  const parsed = parseCronExpression(expression, timezone, dst, anchor);
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
  const { timezone, start, end, limit = Number.POSITIVE_INFINITY, dst, anchor } = options;
  if (limit !== Number.POSITIVE_INFINITY) checkCount('limit', limit);
  checkDate('start', start);
  checkDate('end', end);
  const parsed = parseCronExpression(expression, timezone, dst, anchor);
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
  readonly dst: { readonly repeated: DstRepeated; readonly gap: DstGap };
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

/** An `@every` interval: absolute instants `anchor + k·every`, whatever the zone says. */
class IntervalCron implements ParsedCron {
  readonly expression: string;
  readonly normalized: string;
  readonly hasSeconds: boolean;
  readonly timezone: string;
  readonly dst = resolveDstRules(true, null);
  readonly #everyMs: number;
  readonly #anchorMs: number;

  constructor(
    expression: string,
    normalized: string,
    everyMs: number,
    hasSeconds: boolean,
    timezone: string,
    anchorMs: number,
  ) {
    this.expression = expression;
    this.normalized = normalized;
    this.hasSeconds = hasSeconds;
    this.timezone = timezone;
    this.#everyMs = everyMs;
    this.#anchorMs = anchorMs;
  }

  /** The same interval counted from `anchor`. */
  anchoredAt(anchor: Date): IntervalCron {
    const { expression, normalized, hasSeconds, timezone } = this;
    return new IntervalCron(expression, normalized, this.#everyMs, hasSeconds, timezone, anchor.getTime());
  }

  next(after: Date): Date {
    checkDate('after', after);
    return new Date(nextIntervalInstant(this.#everyMs, this.#anchorMs, after.getTime()));
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
