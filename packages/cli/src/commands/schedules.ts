import { readFile } from 'node:fs/promises';
import { type Json, ValidationError } from '@orreryjs/core';
import {
  CATCHUP_POLICIES,
  CATCHUP_POLICY_DESCRIPTIONS,
  DST_DEFAULTS,
  DST_GAP_DESCRIPTIONS,
  DST_REPEATED_DESCRIPTIONS,
  OVERLAP_POLICIES,
  OVERLAP_POLICY_DESCRIPTIONS,
  SCHEDULE_DEFAULTS,
} from '@orreryjs/cron';
import type { CronScheduleInput, DstRules, SyncSchedulesResult } from '@orreryjs/runner';
import type { Command } from 'commander';
import {
  CRON_ARGUMENT_HELP,
  integerAtLeast,
  oneOf,
  parseDstRules,
  parseInstant,
  parseJsonObject,
} from '../arguments.js';
import { EXIT } from '../failure.js';
import { addWideOption, type CliIo, formatInstant, type OutputOptions, writeJson, writeLine } from '../output.js';
import { type DatabaseOptions, databaseCommand, withClient } from '../runner-session.js';
import {
  HISTORY_NARROWED,
  SCHEDULES_NARROWED,
  scheduleLabel,
  writeHistory,
  writeSchedule,
  writeSchedules,
} from '../schedule-view.js';

interface CommonOptions extends DatabaseOptions, OutputOptions {}

/**
 * Options shared by `add` and `update`: every field of a schedule's definition, and its note.
 * `false` comes from an update's `--no-…` flag and clears the field.
 */
interface DefinitionOptions {
  name?: string;
  tz?: string;
  context?: Record<string, Json>;
  catchup?: CronScheduleInput['catchupPolicy'];
  overlap?: CronScheduleInput['overlapPolicy'];
  pauseOnFailure?: boolean;
  maxRuns?: number | false;
  dst?: DstRules | false;
  note?: string | false;
  jitterMs?: number;
  startAt?: Date | false;
  endAt?: Date | false;
}

interface ListOptions extends CommonOptions {
  workflow?: string;
  enabledOnly?: boolean;
  limit: number;
  offset: number;
}

interface AddOptions extends CommonOptions, DefinitionOptions {
  disabled?: boolean;
  onConflict: 'error' | 'update';
}

interface UpdateOptions extends CommonOptions, DefinitionOptions {
  workflow?: string;
  cron?: string;
}

interface PauseOptions extends CommonOptions {
  note?: string;
}

interface BackfillOptions extends CommonOptions {
  start: Date;
  end: Date;
}

interface ApplyOptions extends CommonOptions {
  prune?: 'pause' | 'delete';
  scopePrefix?: string;
  dryRun?: boolean;
}

interface PageOptions extends CommonOptions {
  limit: number;
  offset: number;
}

/** `orrery schedules …`: list, inspect and manage cron schedules. */
export function registerScheduleCommands(program: Command, io: CliIo): void {
  const schedules = program.command('schedules').description('List, inspect and manage cron schedules');

  addWideOption(databaseCommand(schedules, 'list', 'List schedules with their next and last run'), SCHEDULES_NARROWED)
    .option('--workflow <name>', 'only schedules of this workflow')
    .option('--enabled-only', 'only enabled schedules')
    .option('--limit <n>', 'at most this many', integerAtLeast(1), 100)
    .option('--offset <n>', 'skip this many', integerAtLeast(0), 0)
    .action(async (options: ListOptions) => {
      const found = await withClient(options, {}, (client) =>
        client.listCronSchedules({
          limit: options.limit,
          offset: options.offset,
          ...(options.workflow === undefined ? {} : { workflowName: options.workflow }),
          ...(options.enabledOnly ? { enabledOnly: true } : {}),
        }),
      );
      writeSchedules(io, found, options);
    });

  databaseCommand(schedules, 'show', 'Show every field of one schedule')
    .argument('<schedule>', 'schedule id or name')
    .action(async (idOrName: string, options: CommonOptions) => {
      writeSchedule(io, await withClient(options, {}, (client) => client.getCronSchedule(idOrName)), options.json);
    });

  addDefinitionOptions(
    databaseCommand(schedules, 'add', 'Create a schedule (re-adding an identical one is a no-op)'),
    'add',
  )
    .argument('<workflow>', 'name of a workflow some runner registered (see `orrery workflows`)')
    .argument('<cron>', CRON_ARGUMENT_HELP)
    .option('--disabled', 'create the schedule paused')
    .option(
      '--on-conflict <policy>',
      'when the name is taken by another definition: error or update',
      oneOf(['error', 'update'] as const),
      'error',
    )
    .action(async (workflowName: string, cronExpression: string, options: AddOptions) => {
      // Without --name the input is refused with a ValidationError saying a name is required.
      const input = { workflowName, cronExpression, ...definitionFields(options) } as CronScheduleInput;
      if (options.disabled) input.enabled = false;
      const added = await withClient(options, {}, (client) =>
        client.addCronSchedule(input, { onConflict: options.onConflict }),
      );
      writeSchedule(io, added, options.json);
    });

  const update = addDefinitionOptions(
    databaseCommand(schedules, 'update', 'Change fields of a schedule (use pause/resume for enabled)'),
    'update',
  );
  update
    .argument('<schedule>', 'schedule id or name')
    .option('--workflow <name>', 'run another workflow (one some runner registered)')
    .option('--cron <expression>', 'new cron expression')
    .action(async (idOrName: string, options: UpdateOptions) => {
      const patch: Partial<CronScheduleInput> = definitionFields(options);
      if (options.workflow !== undefined) patch.workflowName = options.workflow;
      if (options.cron !== undefined) patch.cronExpression = options.cron;
      if (Object.keys(patch).length === 0) {
        update.error(
          'error: nothing to update; pass at least one field to change, such as --cron, --tz or --overlap (see orrery schedules update --help).',
          { exitCode: EXIT.usage },
        );
      }
      const updated = await withClient(options, {}, (client) => client.updateCronSchedule(idOrName, patch));
      writeSchedule(io, updated, options.json);
    });

  databaseCommand(
    schedules,
    'apply',
    'Make the schedules match a JSON file (by name, in one transaction); prints the plan as a diff',
  )
    .argument('<file>', 'JSON array of schedule inputs, as addCronSchedule takes them (startAt, endAt: ISO-8601)')
    .option(
      '--prune <mode>',
      'schedules in scope the file leaves out: pause or delete (default: keep)',
      oneOf(PRUNE_MODES),
    )
    .option(
      '--scope-prefix <prefix>',
      'the file owns only the schedules whose name starts with this (what --prune may touch)',
    )
    .option('--dry-run', 'print the plan and change nothing')
    .action(async (file: string, options: ApplyOptions) => {
      const inputs = await readScheduleFile(file);
      const dryRun = options.dryRun === true;
      const plan = await withClient(options, {}, (client) =>
        client.syncCronSchedules(inputs, {
          dryRun,
          ...(options.prune === undefined ? {} : { prune: options.prune }),
          ...(options.scopePrefix === undefined ? {} : { scope: { namePrefix: options.scopePrefix } }),
        }),
      );
      if (options.json) writeJson(io, { dryRun, ...plan });
      else writePlan(io, plan, { dryRun, prune: options.prune });
    });

  databaseCommand(schedules, 'pause', 'Disable a schedule; nothing fires until resumed')
    .argument('<schedule>', 'schedule id or name')
    .option('--note <text>', 'why it is paused, shown with the schedule until it is resumed')
    .action(async (idOrName: string, options: PauseOptions) => {
      const schedule = await withClient(options, {}, (client) =>
        client.setCronScheduleEnabled(idOrName, false, options.note === undefined ? {} : { note: options.note }),
      );
      writeSchedule(io, schedule, options.json);
    });

  databaseCommand(
    schedules,
    'resume',
    'Enable a schedule (clearing its note); it next fires at its first slot after now',
  )
    .argument('<schedule>', 'schedule id or name')
    .action(async (idOrName: string, options: CommonOptions) => {
      const schedule = await withClient(options, {}, (client) => client.setCronScheduleEnabled(idOrName, true));
      writeSchedule(io, schedule, options.json);
    });

  databaseCommand(schedules, 'delete', 'Delete a schedule (its history is kept)')
    .argument('<schedule>', 'schedule id or name')
    .action(async (idOrName: string, options: CommonOptions) => {
      const deleted = await withClient(options, {}, async (client) => {
        const schedule = await client.getCronSchedule(idOrName);
        await client.deleteCronSchedule(schedule.id);
        return schedule;
      });
      if (options.json) writeJson(io, { deleted: true, id: deleted.id, name: deleted.name });
      else writeLine(io, `Deleted schedule ${scheduleLabel(deleted)}; its history is kept.`);
    });

  databaseCommand(
    schedules,
    'trigger',
    "Start a pipeline of the schedule now (audited as a manual occurrence); it follows the schedule's overlap policy",
  )
    .argument('<schedule>', 'schedule id or name')
    .option('--force', 'start it even while an earlier occurrence is active, whatever the overlap policy')
    .action(async (idOrName: string, options: CommonOptions & { force?: boolean }) => {
      const { schedule, executionId } = await withClient(options, {}, async (client) => {
        const schedule = await client.getCronSchedule(idOrName);
        const execution = await client.triggerCronSchedule(
          schedule.id,
          options.force === true ? { overlapPolicy: 'allow' } : undefined,
        );
        return { schedule, executionId: execution.id };
      });
      const result = {
        scheduleId: schedule.id,
        scheduleName: schedule.name,
        workflowName: schedule.workflowName,
        executionId,
      };
      if (options.json) writeJson(io, result);
      else
        writeLine(
          io,
          `Triggered schedule ${scheduleLabel(schedule)}: execution ${executionId} of workflow "${schedule.workflowName}" is queued for a worker.`,
        );
    });

  databaseCommand(schedules, 'backfill', 'Start a pipeline for every slot in [start, end) that has none')
    .argument('<schedule>', 'schedule id or name')
    .requiredOption('--start <instant>', 'first instant of the range, included (ISO-8601)', parseInstant)
    .requiredOption('--end <instant>', 'end of the range, excluded, not after now (ISO-8601)', parseInstant)
    .action(async (idOrName: string, options: BackfillOptions) => {
      const { schedule, counts } = await withClient(options, {}, async (client) => {
        const schedule = await client.getCronSchedule(idOrName);
        const counts = await client.backfillCronSchedule(schedule.id, { start: options.start, end: options.end });
        return { schedule, counts };
      });
      if (options.json) {
        writeJson(io, { scheduleId: schedule.id, start: options.start, end: options.end, ...counts });
        return;
      }
      const range = `[${formatInstant(options.start)}, ${formatInstant(options.end)})`;
      writeLine(
        io,
        `Backfilled schedule ${scheduleLabel(schedule)} over ${range}: ${counts.created} created, ${counts.existing} already present.`,
      );
    });

  addWideOption(
    databaseCommand(
      schedules,
      'history',
      "Show a schedule's occurrences, newest first: fired, skipped, missed, manual, backfilled",
    ),
    HISTORY_NARROWED,
  )
    .argument('<schedule>', 'schedule id or name')
    .option('--limit <n>', 'at most this many', integerAtLeast(1), 50)
    .option('--offset <n>', 'skip this many', integerAtLeast(0), 0)
    .action(async (idOrName: string, options: PageOptions) => {
      const rows = await withClient(options, {}, (client) =>
        client.getCronExecutionHistory(idOrName, { limit: options.limit, offset: options.offset }),
      );
      writeHistory(io, rows, options);
    });
}

/** `--prune` choices; leaving the flag out keeps the schedules the file does not list. */
const PRUNE_MODES = ['pause', 'delete'] as const;

/**
 * The schedule inputs of an `apply` file: a JSON array of objects, `startAt`/`endAt` written as
 * ISO-8601 instants (as the flags take them) and turned into dates. Everything else is
 * validated by syncCronSchedules, which names the bad entry.
 * @throws ValidationError for a file that cannot be read, is not a JSON array, or holds a bad instant.
 */
async function readScheduleFile(file: string): Promise<CronScheduleInput[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ValidationError(`cannot read schedule file ${file}: ${(error as Error).message}`, { cause: error });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ValidationError(`schedule file ${file} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  if (!Array.isArray(parsed)) {
    throw new ValidationError(
      `schedule file ${file} must hold a JSON array of schedule inputs such as [{ "name": "nightly", "workflowName": "report", "cronExpression": "0 2 * * *" }].`,
    );
  }
  return parsed.map((entry: unknown, index) => {
    if (typeof entry !== 'object' || entry === null) return entry as CronScheduleInput;
    const input = { ...entry } as Record<string, unknown>;
    for (const field of ['startAt', 'endAt'] as const) {
      const value = input[field];
      if (typeof value !== 'string') continue;
      try {
        input[field] = parseInstant(value);
      } catch {
        throw new ValidationError(
          `schedules[${index}]: ${field} must be an ISO-8601 instant such as 2024-05-01T02:00:00Z, got ${JSON.stringify(value)}.`,
        );
      }
    }
    return input as unknown as CronScheduleInput;
  });
}

/** The plan as a diff: `+` created, `~` updated (with the fields), `-` pruned, `=` unchanged; then a summary. */
function writePlan(
  io: CliIo,
  plan: SyncSchedulesResult,
  { dryRun, prune }: { dryRun: boolean; prune: ApplyOptions['prune'] },
): void {
  for (const name of plan.created) writeLine(io, `+ ${name}`);
  for (const { name, changed } of plan.updated) writeLine(io, `~ ${name}: ${changed.join(', ')}`);
  for (const name of plan.pruned) writeLine(io, `- ${name} (${prune === 'delete' ? 'delete' : 'pause'})`);
  for (const name of plan.unchanged) writeLine(io, `= ${name}`);
  const counts = `${plan.created.length} to create, ${plan.updated.length} to update, ${plan.pruned.length} to prune, ${plan.unchanged.length} unchanged`;
  writeLine(io, dryRun ? `Dry run: ${counts}; nothing written.` : `Applied: ${counts}.`);
}

/** The flags of every definition field; an update also gets `--no-…` flags that clear optional ones. */
function addDefinitionOptions(command: Command, verb: 'add' | 'update'): Command {
  command
    .option('--name <name>', 'unique name to address the schedule by (not UUID-shaped)')
    .option('--tz <zone>', `IANA timezone the expression is read in (default ${SCHEDULE_DEFAULTS.timezone})`)
    .option('--context <json>', 'input context of every pipeline it starts, a JSON object', parseJsonObject)
    .option(
      '--catchup <policy>',
      `after downtime: ${CATCHUP_POLICIES.join(', ')} (default ${SCHEDULE_DEFAULTS.catchupPolicy})`,
      oneOf(CATCHUP_POLICIES),
    )
    .option(
      '--overlap <policy>',
      `while an earlier run is still active: ${OVERLAP_POLICIES.join(', ')} (default ${SCHEDULE_DEFAULTS.overlapPolicy})`,
      oneOf(OVERLAP_POLICIES),
    )
    .option('--pause-on-failure', 'disable the schedule when one of its pipelines fails')
    .option('--no-pause-on-failure', 'keep the schedule enabled when a pipeline fails (the default)')
    .option(
      '--max-runs <n>',
      'disable the schedule after this many scheduled runs (default: no limit)',
      integerAtLeast(1),
    )
    .option('--dst <rules>', 'DST choices: repeated=first|last|both and/or gap=shift|skip (see below)', parseDstRules)
    .option('--note <text>', 'free text shown with the schedule: why it is paused, who owns it')
    .option('--jitter-ms <ms>', 'random delay of up to this many ms per occurrence (default 0)', integerAtLeast(0))
    .option('--start-at <instant>', 'fire no earlier than this ISO-8601 instant', parseInstant)
    .option('--end-at <instant>', 'fire only before this ISO-8601 instant', parseInstant);
  if (verb === 'update') {
    command
      .option('--no-max-runs', 'remove the run limit')
      .option('--no-dst', 'go back to the default DST rules')
      .option('--no-note', 'remove the note')
      .option('--no-start-at', 'remove the start of the active window')
      .option('--no-end-at', 'remove the end of the active window');
  }
  return command.addHelpText('after', SCHEDULE_FIELDS_HELP);
}

/** `  name  what it does (default)` lines of a field's choices, for the help text. */
function choiceLines(descriptions: Readonly<Record<string, string>>, defaultChoice?: string): string {
  const width = Math.max(...Object.keys(descriptions).map((choice) => choice.length));
  return Object.entries(descriptions)
    .map(([choice, text]) => `  ${choice.padEnd(width)}  ${text}${choice === defaultChoice ? ' (default)' : ''}`)
    .join('\n');
}

const { fixedHour, realClock } = DST_DEFAULTS;
const SCHEDULE_FIELDS_HELP = `
--overlap, for a slot that comes while an earlier one is still active:
${choiceLines(OVERLAP_POLICY_DESCRIPTIONS, SCHEDULE_DEFAULTS.overlapPolicy)}

--catchup, for the slots missed while no runner was running:
${choiceLines(CATCHUP_POLICY_DESCRIPTIONS, SCHEDULE_DEFAULTS.catchupPolicy)}

--dst repeated=…, for a wall time that occurs twice at fall-back, fires:
${choiceLines(DST_REPEATED_DESCRIPTIONS)}
--dst gap=…, for a wall time inside a spring-forward gap:
${choiceLines(DST_GAP_DESCRIPTIONS)}
A rule left out keeps the default: repeated=${fixedHour.repeated},gap=${fixedHour.gap} for a fixed hour (30 2 * * *),
repeated=${realClock.repeated},gap=${realClock.gap} for an hour starting with * (0 * * * *).`;

/** The definition fields the user set, and only those, so that a patch leaves the rest alone. */
function definitionFields(options: DefinitionOptions): Partial<CronScheduleInput> {
  const fields: Partial<CronScheduleInput> = {};
  if (options.name !== undefined) fields.name = options.name;
  if (options.tz !== undefined) fields.timezone = options.tz;
  if (options.context !== undefined) fields.context = options.context;
  if (options.catchup !== undefined) fields.catchupPolicy = options.catchup;
  if (options.overlap !== undefined) fields.overlapPolicy = options.overlap;
  if (options.pauseOnFailure !== undefined) fields.pauseOnFailure = options.pauseOnFailure;
  if (options.maxRuns !== undefined) fields.maxRuns = orNull(options.maxRuns);
  if (options.dst !== undefined) fields.dst = orNull(options.dst);
  if (options.note !== undefined) fields.note = orNull(options.note);
  if (options.jitterMs !== undefined) fields.jitterMs = options.jitterMs;
  if (options.startAt !== undefined) fields.startAt = orNull(options.startAt);
  if (options.endAt !== undefined) fields.endAt = orNull(options.endAt);
  return fields;
}

/** A `--no-…` flag's false as the null that clears the field. */
function orNull<T>(value: T | false): T | null {
  return value === false ? null : value;
}
