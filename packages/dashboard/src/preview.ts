import { type DstRules, SCHEDULE_DEFAULTS } from '@orreryjs/cron';
import { ValidationError } from '@orreryjs/runner';
import { describeCron, formatRun, upcomingRuns } from './format.js';
import { parseInstant } from './input.js';

// The live preview of the schedule forms: while an operator types an expression, the page
// asks `GET api/preview` for its next runs. It reads and writes nothing stored, so read-only
// dashboards answer it too; the engine parses the expression, so the preview refuses exactly
// what saving the form would refuse, with the same message.

/** How many runs the preview lists: as many as the Schedules page shows. */
export const PREVIEW_COUNT = 5;

/** The answer of `GET api/preview`. */
export interface CronPreview {
  /** The expression in words, or null when cronstrue cannot read it. */
  description: string | null;
  timezone: string;
  /** The next runs, UTC instants (ISO-8601 in JSON); fewer when the expression ends (a past year). */
  nextRuns: Date[];
  /** The same runs as the pages show them: in the zone, and in UTC. */
  shown: { local: string; utc: string }[];
}

/** The form's DST fields (`dst.repeated`, `dst.gap`); an empty one keeps the expression's default. */
function dstOf(query: URLSearchParams): DstRules | null {
  const repeated = query.get('dst.repeated') || undefined;
  const gap = query.get('dst.gap') || undefined;
  if (repeated === undefined && gap === undefined) return null;
  return { ...(repeated === undefined ? {} : { repeated }), ...(gap === undefined ? {} : { gap }) } as DstRules;
}

/**
 * The next {@link PREVIEW_COUNT} runs after `now` of `expression` in `timezone` (default
 * UTC), with the form's DST choices and, for an `@every` interval, counted from `startAt`.
 * @throws ValidationError when the expression is missing, a DST choice is unknown or startAt
 * is not a date; InvalidCronExpressionError or InvalidTimezoneError from the engine.
 */
export function previewRuns(query: URLSearchParams, now: Date): CronPreview {
  const expression = query.get('expression')?.trim() ?? '';
  if (expression === '') {
    throw new ValidationError('expression is required: type a cron expression such as 30 2 * * *.');
  }
  const timezone = query.get('timezone')?.trim() || SCHEDULE_DEFAULTS.timezone;
  const startText = query.get('startAt');
  const startAt = startText === null || startText === '' ? null : parseInstant('startAt', startText);
  const nextRuns = upcomingRuns(
    { cronExpression: expression, timezone, dst: dstOf(query), startAt },
    now,
    PREVIEW_COUNT,
  );
  return {
    description: describeCron(expression),
    timezone,
    nextRuns,
    shown: nextRuns.map((at) => formatRun(at, timezone)),
  };
}
