import type { CronExecution, CronSchedule } from '@orreryjs/runner';
import {
  type CliIo,
  type Column,
  formatDuration,
  formatInstant,
  orDash,
  writeJson,
  writeRecord,
  writeTable,
} from './output.js';

// How schedules and their ledger rows look in tables. JSON output is the runner's own objects.

const SCHEDULE_COLUMNS: readonly Column<CronSchedule>[] = [
  { header: 'ID', cell: (s) => s.id },
  { header: 'Name', cell: (s) => orDash(s.name) },
  { header: 'Workflow', cell: (s) => s.workflowName },
  { header: 'Cron', cell: (s) => s.cronExpression },
  { header: 'Timezone', cell: (s) => s.timezone },
  { header: 'Enabled', cell: (s) => (s.enabled ? 'yes' : 'no') },
  { header: 'Runs', cell: (s) => (s.maxRuns === null ? s.runCount : `${s.runCount} of ${s.maxRuns}`) },
  { header: 'Next run (UTC)', cell: (s) => formatInstant(s.nextRunAt) },
  { header: 'Last run (UTC)', cell: (s) => formatInstant(s.lastRunAt) },
  { header: 'Note', cell: (s) => orDash(shorten(s.note, NOTE_WIDTH)) },
];

/** How much of a note the list shows; `show` prints all of it. */
const NOTE_WIDTH = 40;

const HISTORY_COLUMNS: readonly Column<CronExecution>[] = [
  { header: 'Scheduled (UTC)', cell: (e) => formatInstant(e.scheduledTime) },
  { header: 'Status', cell: (e) => e.status },
  { header: 'Source', cell: (e) => e.source },
  { header: 'Missed', cell: (e) => (e.status === 'missed' ? e.missedCount : '-') },
  { header: 'Execution', cell: (e) => orDash(e.pipelineExecutionId) },
  { header: 'Claimed (UTC)', cell: (e) => formatInstant(e.claimedAt) },
  { header: 'Handed off (UTC)', cell: (e) => formatInstant(e.handedOffAt) },
  { header: 'Recovery', cell: (e) => (e.recoveryAttempts > 0 ? `${e.recoveryAttempts} attempt(s)` : '-') },
];

/** Writes a list of schedules as a table, or as a JSON array. */
export function writeSchedules(io: CliIo, schedules: readonly CronSchedule[], json: boolean | undefined): void {
  if (json) writeJson(io, schedules);
  else writeTable(io, SCHEDULE_COLUMNS, schedules, 'No schedules.');
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

/** Writes a schedule's ledger, newest first as the runner returns it, as a table or a JSON array. */
export function writeHistory(io: CliIo, rows: readonly CronExecution[], json: boolean | undefined): void {
  if (json) writeJson(io, rows);
  else writeTable(io, HISTORY_COLUMNS, rows, 'No occurrences recorded for this schedule.');
}

/** `text` cut to `width` characters, ending with `…` when cut. */
function shorten(text: string | null, width: number): string | null {
  return text === null || text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

/** How a schedule is named in a status line: `"nightly" (id)` or just the id. */
export function scheduleLabel(schedule: Pick<CronSchedule, 'id' | 'name'>): string {
  return schedule.name === null ? schedule.id : `"${schedule.name}" (${schedule.id})`;
}
