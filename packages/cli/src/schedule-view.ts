import type { CronExecution, CronSchedule } from '@orreryjs/runner';
import {
  type CliIo,
  type Column,
  formatDuration,
  formatInstant,
  type OutputOptions,
  orDash,
  shortId,
  writeJson,
  writeRecord,
  writeTable,
} from './output.js';

// How schedules and their ledger rows look in tables. JSON output is the runner's own objects.

/** What `schedules list` leaves out or cuts without --wide, as its help says. */
export const SCHEDULES_NARROWED =
  'no ID, Timezone and Last run columns, an unnamed schedule named by its id, workflow, cron and note cut';

// Schedule commands take a whole id or the name, so neither is ever cut: without --wide the
// Name column identifies each schedule (its id when it has no name) and ID is left out.
const SCHEDULE_COLUMNS: readonly Column<CronSchedule>[] = [
  { header: 'ID', cell: (s) => s.id, wideOnly: true },
  { header: 'Name', cell: (s) => orDash(s.name), narrow: (s) => s.name ?? s.id },
  { header: 'Workflow', cell: (s) => s.workflowName, shrinks: true },
  { header: 'Cron', cell: (s) => s.cronExpression, shrinks: true },
  { header: 'Timezone', cell: (s) => s.timezone, wideOnly: true },
  { header: 'Enabled', cell: (s) => (s.enabled ? 'yes' : 'no') },
  { header: 'Runs', cell: (s) => (s.maxRuns === null ? s.runCount : `${s.runCount} of ${s.maxRuns}`) },
  { header: 'Next run (UTC)', cell: (s) => formatInstant(s.nextRunAt) },
  { header: 'Last run (UTC)', cell: (s) => formatInstant(s.lastRunAt), wideOnly: true },
  {
    header: 'Note',
    cell: (s) => orDash(s.note),
    narrow: (s) => orDash(shorten(s.note, NOTE_WIDTH)),
    shrinks: true,
  },
];

/** How much of a note the list shows without --wide; `show` prints all of it. */
const NOTE_WIDTH = 40;

/** What `schedules history` leaves out or shortens without --wide, as its help says. */
export const HISTORY_NARROWED = 'execution ids shortened to 8 characters, no Claimed';

const HISTORY_COLUMNS: readonly Column<CronExecution>[] = [
  { header: 'Scheduled (UTC)', cell: (e) => formatInstant(e.scheduledTime) },
  { header: 'Status', cell: (e) => e.status },
  { header: 'Source', cell: (e) => e.source },
  { header: 'Missed', cell: (e) => (e.status === 'missed' ? e.missedCount : '-') },
  { header: 'Execution', cell: (e) => orDash(e.pipelineExecutionId), narrow: (e) => shortId(e.pipelineExecutionId) },
  { header: 'Claimed (UTC)', cell: (e) => formatInstant(e.claimedAt), wideOnly: true },
  { header: 'Handed off (UTC)', cell: (e) => formatInstant(e.handedOffAt) },
  {
    header: 'Recovery',
    cell: (e) => (e.recoveryAttempts > 0 ? `${e.recoveryAttempts} attempt(s)` : '-'),
    shrinks: true,
  },
];

/** Writes a list of schedules as a table (every column with `wide`), or as a JSON array. */
export function writeSchedules(io: CliIo, schedules: readonly CronSchedule[], output: OutputOptions): void {
  if (output.json) writeJson(io, schedules);
  else writeTable(io, SCHEDULE_COLUMNS, schedules, 'No schedules.', output.wide);
}

/** Writes one schedule, every field, as a two-column table or a JSON object. */
export function writeSchedule(io: CliIo, schedule: CronSchedule, json: boolean | undefined): void {
  if (json) {
    writeJson(io, schedule);
    return;
  }
  writeRecord(io, [
    ['ID', schedule.id],
    ['Name', orDash(schedule.name)],
    ['Workflow', schedule.workflowName],
    ['Cron', schedule.cronExpression],
    ['Timezone', schedule.timezone],
    ['Enabled', schedule.enabled ? 'yes' : 'no'],
    ['Catch-up', schedule.catchupPolicy],
    ['Overlap', schedule.overlapPolicy],
    ['Pause on failure', schedule.pauseOnFailure ? 'yes' : 'no'],
    ['Runs', `${schedule.runCount} ${schedule.maxRuns === null ? '(no limit)' : `of at most ${schedule.maxRuns}`}`],
    ['DST', schedule.dst === null ? 'default rules' : `repeated=${schedule.dst.repeated},gap=${schedule.dst.gap}`],
    ['Note', orDash(schedule.note)],
    ['Jitter', schedule.jitterMs > 0 ? formatDuration(schedule.jitterMs) : 'none'],
    ['Active from (UTC)', formatInstant(schedule.startAt)],
    ['Active until (UTC)', formatInstant(schedule.endAt)],
    ['Next run (UTC)', formatInstant(schedule.nextRunAt)],
    ['Last run (UTC)', formatInstant(schedule.lastRunAt)],
    ['Context', JSON.stringify(schedule.context)],
    ['Created (UTC)', formatInstant(schedule.createdAt)],
    ['Updated (UTC)', formatInstant(schedule.updatedAt)],
  ]);
}

/** Writes a schedule's ledger, newest first as the runner returns it, as a table (every column with `wide`) or a JSON array. */
export function writeHistory(io: CliIo, rows: readonly CronExecution[], output: OutputOptions): void {
  if (output.json) writeJson(io, rows);
  else writeTable(io, HISTORY_COLUMNS, rows, 'No occurrences recorded for this schedule.', output.wide);
}

/** `text` cut to `width` characters, ending with `…` when cut. */
function shorten(text: string | null, width: number): string | null {
  return text === null || text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

/** How a schedule is named in a status line: `"nightly" (id)` or just the id. */
export function scheduleLabel(schedule: Pick<CronSchedule, 'id' | 'name'>): string {
  return schedule.name === null ? schedule.id : `"${schedule.name}" (${schedule.id})`;
}
