import { nextOccurrences, validateTimezone } from '@orreryjs/cron';
import type { Command } from 'commander';
import { integerAtLeast, parseInstant } from '../arguments.js';
import { addJsonOption, type CliIo, type OutputOptions, writeJson, writeTable } from '../output.js';

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

/** `orrery next "<expr>"`: previews fire times without touching a database. */
export function registerNextCommand(program: Command, io: CliIo): void {
  addJsonOption(program.command('next'))
    .description('Preview the next fire times of a cron expression (no database needed)')
    .argument('<expression>', 'cron expression: 5 fields, 6 with seconds first, or @daily, @hourly, ...')
    .option('--tz <zone>', 'IANA timezone the expression is read in', 'UTC')
    .option('-n, --count <n>', 'how many fire times to show', integerAtLeast(1), 10)
    .option('--after <instant>', 'list fire times strictly after this ISO-8601 instant (default: now)', parseInstant)
    .action((expression: string, options: NextOptions) => {
      const timezone = validateTimezone(options.tz);
      const instants = nextOccurrences(expression, {
        timezone,
        count: options.count,
        ...(options.after === undefined ? {} : { after: options.after }),
      });
      const occurrences = instants.map((at) => ({ utc: at.toISOString(), local: localIso(at, timezone) }));
      if (options.json) {
        writeJson(io, { expression, timezone, occurrences });
        return;
      }
      writeTable<Occurrence>(
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
