import { type DstRules, nextOccurrences } from '@orreryjs/cron';
import cronstrue from 'cronstrue';

const INTERVAL_UNIT_WORDS: Readonly<Record<string, string>> = {
  d: 'day',
  h: 'hour',
  m: 'minute',
  s: 'second',
  ms: 'millisecond',
};

/**
 * The expression in English ("At 09:00 AM, Monday through Friday"; "Every 1 hour 30
 * minutes" for `@every 1h30m`, which cronstrue does not know), or null when it cannot be read.
 */
export function describeCron(expression: string): string | null {
  const interval = /^@every\s+((?:\d+(?:ms|d|h|m|s))+)$/i.exec(expression.trim());
  if (interval !== null) {
    const parts = [...interval[1]!.matchAll(/(\d+)(ms|d|h|m|s)/g)].map(([, amount, unit]) => {
      const word = INTERVAL_UNIT_WORDS[unit!]!;
      return `${amount} ${amount === '1' ? word : `${word}s`}`;
    });
    return `Every ${parts.join(' ')}`;
  }
  try {
    return cronstrue.toString(expression, { verbose: false });
  } catch {
    return null;
  }
}

/** What the next runs of a schedule (or of a form being filled in) depend on. */
export interface RunSource {
  cronExpression: string;
  timezone: string;
  dst: DstRules | null;
  /** An `@every` interval counts from here. */
  startAt?: Date | null;
}

/**
 * The next `count` fire times after `after` (UTC instants), by the DST choices and, for an
 * `@every` interval, counted from `startAt`.
 * @throws InvalidCronExpressionError, InvalidTimezoneError or ValidationError (dst) from the
 * engine, whose messages the preview shows as they are.
 */
export function upcomingRuns(source: RunSource, after: Date, count = 5): Date[] {
  const dst = source.dst ?? undefined;
  const anchor = source.startAt ?? undefined;
  return nextOccurrences(source.cronExpression, { timezone: source.timezone, after, count, dst, anchor });
}

/** {@link upcomingRuns} of a stored schedule; [] for an unreadable one, so that one bad row never breaks a page. */
export function nextRuns(schedule: RunSource, after: Date, count = 5): Date[] {
  try {
    return upcomingRuns(schedule, after, count);
  } catch {
    return [];
  }
}

const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/** `2026-11-23 09:00:00` in `timeZone` (default UTC): sortable, unambiguous, locale-free. */
export function formatInstant(at: Date | null | undefined, timeZone = 'UTC'): string {
  if (at === null || at === undefined) return '—';
  let format = zoneFormats.get(timeZone);
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat('en-CA', {
        timeZone,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        hourCycle: 'h23',
      });
    } catch {
      return at.toISOString();
    }
    zoneFormats.set(timeZone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(at).map((p) => [p.type, p.value]));
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
}

/**
 * One upcoming run: `2026-11-24 02:30:00` in the schedule's zone and `07:30:00 UTC` (with the
 * UTC date, `11-25 07:30:00 UTC`, when it differs), seconds always shown as everywhere else.
 */
export function formatRun(at: Date, timeZone: string): { local: string; utc: string } {
  const local = formatInstant(at, timeZone);
  const utc = formatInstant(at);
  const sameDay = local.slice(0, 10) === utc.slice(0, 10);
  return { local, utc: `${sameDay ? '' : `${utc.slice(5, 10)} `}${utc.slice(11)} UTC` };
}

/** A duration for people: `850 ms`, `12.3 s`, `4 min 05 s`, `2 h 10 min`. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  const sign = ms < 0 ? '−' : '';
  const abs = Math.abs(ms);
  if (abs < 1000) return `${sign}${Math.round(abs)} ms`;
  if (abs < 60_000) return `${sign}${(abs / 1000).toFixed(1)} s`;
  if (abs < 3_600_000) {
    const s = Math.floor(abs / 1000);
    return `${sign}${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  }
  const m = Math.floor(abs / 60_000);
  return `${sign}${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}
