import { type ParsedCron, parseCronExpression, validateTimezone } from '@orreryjs/cron';
import type { Command } from 'commander';
import { CRON_ARGUMENT_HELP, integerBetween, parseInstant } from '../arguments.js';
import { addJsonOption, type CliIo, type OutputOptions, writeJsonStream, writeTableStream } from '../output.js';

interface NextOptions extends OutputOptions {
  tz: string;
  count: number;
  after?: Date;
}

/** One fire time, in UTC and on the schedule's wall clock. */
interface Occurrence {
  utc: string;
  local: string;
}

/**
 * The most fire times one `orrery next` prints. Each is computed and printed as it comes, so
 * memory does not grow with the count, but a count in the millions is a typo or a runaway
 * script; past this, page with `--after`.
 */
const MAX_NEXT_COUNT = 10_000;

/** `orrery next "<expr>"`: previews fire times without touching a database. */
export function registerNextCommand(program: Command, io: CliIo): void {
  addJsonOption(program.command('next'))
    .description('Preview the next fire times of a cron expression (no database needed)')
    .argument('<expression>', CRON_ARGUMENT_HELP)
    .option('--tz <zone>', 'IANA timezone the expression is read in', 'UTC')
    .option(
      '-n, --count <n>',
      `how many fire times to show (at most ${MAX_NEXT_COUNT})`,
      integerBetween(1, MAX_NEXT_COUNT, 'for later fire times, run again with --after the last one shown.'),
      10,
    )
    .option('--after <instant>', 'list fire times strictly after this ISO-8601 instant (default: now)', parseInstant)
    .action((expression: string, options: NextOptions) => {
      const timezone = validateTimezone(options.tz);
      // Parsed before anything is written, so a bad expression prints an error and nothing else.
      const parsed = parseCronExpression(expression, timezone);
      const occurrences = occurrencesAfter(parsed, options.after ?? new Date(), options.count);
      if (options.json) {
        writeJsonStream(io, { expression, timezone }, 'occurrences', occurrences);
        return;
      }
      writeTableStream<Occurrence>(
        io,
        [
          { header: 'UTC', cell: (o) => o.utc },
          { header: `Local (${timezone})`, cell: (o) => o.local },
        ],
        occurrences,
        `No fire times for "${expression}" within the next nine years.`,
      );
    });
}

/** Up to `count` fire times strictly after `after`, each computed when asked for. */
function* occurrencesAfter(parsed: ParsedCron, after: Date, count: number): Generator<Occurrence> {
  let cursor = after;
  for (let shown = 0; shown < count; shown += 1) {
    const next = parsed.next(cursor);
    if (next === null) return;
    yield { utc: next.toISOString(), local: localIso(next, parsed.timezone) };
    cursor = next;
  }
}

/** `at` on the wall clock of `timezone`, as ISO-8601 with its offset: 2024-03-10T03:30:00-04:00. */
export function localIso(at: Date, timezone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    timeZoneName: 'longOffset',
  }).formatToParts(at);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  // longOffset reads "GMT-04:00", or plain "GMT" at offset zero.
  const offset = part('timeZoneName').replace('GMT', '') || '+00:00';
  return `${part('year')}-${part('month')}-${part('day')}T${part('hour')}:${part('minute')}:${part('second')}${offset}`;
}
