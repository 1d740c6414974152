import {
  isOrreryError,
  type Json,
  PIPELINE_STATUSES,
  type PipelineStatus,
  type PipelineSummary,
  type TaskAttempt,
} from '@orreryjs/core';
import type { OrreryClient } from '@orreryjs/runner';
import type { Command } from 'commander';
import { integerAtLeast, oneOf, parseJson } from '../arguments.js';
import { oneLine, UsageError } from '../failure.js';
import { cutStatus, STATUS_MIN_WIDTH, statusWithReason } from '../flow-control-view.js';
import {
  addWideOption,
  type CliIo,
  type Column,
  formatDuration,
  formatInstant,
  type OutputOptions,
  orDash,
  shortId,
  writeJson,
  writeLine,
  writeRecord,
  writeTable,
} from '../output.js';
import { type DatabaseOptions, databaseCommand, withClient } from '../runner-session.js';
import { attachDependencies, attachSignalWaits, drawTaskTree } from '../task-tree.js';

type CommonOptions = DatabaseOptions & OutputOptions;

const STATUSES: readonly PipelineStatus[] = PIPELINE_STATUSES;

// Without --wide: ids shortened to 8 characters (commands take them), no Started and
// Scheduled columns, workflow, status reason and error cut to fit.
const EXECUTION_COLUMNS: readonly Column<PipelineSummary>[] = [
  { header: 'ID', cell: (e) => e.executionId, narrow: (e) => shortId(e.executionId) },
  { header: 'Workflow', cell: (e) => e.workflowName, shrinks: true },
  { header: 'Status', cell: statusWithReason, shrinks: true, minWidth: STATUS_MIN_WIDTH, cut: cutStatus },
  { header: 'Created (UTC)', cell: (e) => formatInstant(e.createdAt) },
  { header: 'Started (UTC)', cell: (e) => formatInstant(e.startedAt), wideOnly: true },
  { header: 'Scheduled (UTC)', cell: (e) => formatInstant(e.scheduledTime), wideOnly: true },
  { header: 'Duration', cell: (e) => formatDuration(e.durationMs) },
  { header: 'Error', cell: (e) => orDash(e.error === undefined ? undefined : oneLine(e.error)), shrinks: true },
];

// The attempts of a task: which runner ran each and how it ended. Without --wide, runner and error cut to fit.
const ATTEMPT_COLUMNS: readonly Column<TaskAttempt>[] = [
  { header: 'Attempt', cell: (a) => a.attempt },
  { header: 'Outcome', cell: (a) => a.outcome },
  { header: 'Runner', cell: (a) => orDash(a.runnerId), shrinks: true },
  { header: 'Started (UTC)', cell: (a) => formatInstant(a.startedAt) },
  { header: 'Ended (UTC)', cell: (a) => formatInstant(a.endedAt) },
  { header: 'Error', cell: (a) => orDash(a.error === undefined ? undefined : oneLine(a.error)), shrinks: true },
];

const ID_HELP = 'execution id, or its first 8 or more hex digits when no other id starts with them';

/**
 * The whole id of the execution `id` names: `id` itself, or the one id starting with it (8+
 * hex digits, as tables show ids shortened). A prefix that several ids share is a usage
 * error listing some of them; one that none has, the usual not-found error.
 */
async function resolveId(client: OrreryClient, id: string): Promise<string> {
  try {
    return await client.resolveExecutionId(id);
  } catch (error) {
    if (isOrreryError(error, 'VALIDATION')) throw new UsageError(error.message, { cause: error });
    throw error;
  }
}

/**
 * `orrery executions …`: list pipeline executions, show one with its task DAG, cancel, pause,
 * resume or retry one, or send one a signal.
 */
export function registerExecutionCommands(program: Command, io: CliIo): void {
  const executions = program
    .command('executions')
    .description('List pipeline executions, inspect one, cancel, pause, resume or retry it, or send it a signal');

  addWideOption(
    databaseCommand(executions, 'list', 'List executions, newest first'),
    'ids shortened to 8 characters, no Started and Scheduled, workflow, why a pending one waits and error cut',
  )
    .option('--workflow <name>', 'only executions of this workflow')
    .option('--schedule <schedule>', 'only executions started by this schedule (id or name)')
    .option('--status <status>', `only executions in this state: ${STATUSES.join(', ')}`, oneOf(STATUSES))
    .option('--limit <n>', 'at most this many', integerAtLeast(1), 50)
    .option('--offset <n>', 'skip this many', integerAtLeast(0), 0)
    .action(
      async (
        options: CommonOptions & {
          workflow?: string;
          schedule?: string;
          status?: PipelineStatus;
          limit: number;
          offset: number;
        },
      ) => {
        const found = await withClient(options, {}, async (client) => {
          // A name is resolved to its schedule's id (an unknown one is ScheduleNotFoundError).
          const scheduleId =
            options.schedule === undefined ? undefined : (await client.getCronSchedule(options.schedule)).id;
          return client.listExecutions({
            limit: options.limit,
            offset: options.offset,
            ...(options.workflow === undefined ? {} : { workflowName: options.workflow }),
            ...(options.status === undefined ? {} : { status: options.status }),
            ...(scheduleId === undefined ? {} : { scheduleId }),
          });
        });
        if (options.json) writeJson(io, found);
        else writeTable(io, EXECUTION_COLUMNS, found, 'No executions.', options.wide);
      },
    );

  databaseCommand(executions, 'retry', 'Run a failed or cancelled execution again from its failed tasks')
    .argument('<id>', ID_HELP)
    .action(async (id: string, options: CommonOptions) => {
      const retried = await withClient(options, {}, async (client) => {
        const execution = await client.retryExecution(await resolveId(client, id));
        return client.getExecutionResult(execution.id);
      });
      if (options.json) {
        writeJson(io, retried);
        return;
      }
      const again = retried.tasks.filter((task) => task.status === 'ready' || task.status === 'not_started');
      writeLine(
        io,
        `Execution ${retried.executionId} is ${retried.status} again; tasks to run: ${again.map((task) => task.taskId).join(', ') || 'none'}.`,
      );
    });

  databaseCommand(
    executions,
    'show',
    'Show one execution and its task DAG: state, attempts and duration of each task, and the attempts of a task retried',
  )
    .argument('<id>', ID_HELP)
    .action(async (id: string, options: CommonOptions) => {
      // Task rows keep states, not the DAG's edges: those come from the definitions runners stored.
      const { result, summary, workflow } = await withClient(options, {}, async (client) => {
        const executionId = await resolveId(client, id);
        const result = await client.getExecutionResult(executionId);
        // Its priority and what it waits for, which the result does not carry.
        const summary = await client.getExecutionSummary(executionId);
        const versions = (await client.listWorkflows()).filter((w) => w.name === result.workflowName);
        // The version that ran, else the latest one stored.
        const workflow = versions.find((w) => w.version === result.workflowVersion) ?? versions.at(-1);
        return { result, summary, workflow };
      });
      const tasks = attachSignalWaits(attachDependencies(result.tasks, workflow), workflow);
      if (options.json) {
        const { runAt, priority, waitingFor } = summary;
        writeJson(io, { ...result, runAt, priority, waitingFor, tasks });
        return;
      }
      writeRecord(io, [
        ['ID', result.executionId],
        ['Workflow', result.workflowName],
        ['Version', result.workflowVersion],
        // The summary's status, so that it and its reason were read together.
        ['Status', statusWithReason(summary)],
        ['Priority', summary.priority],
        ['Created (UTC)', formatInstant(result.createdAt)],
        ['Started (UTC)', formatInstant(result.startedAt)],
        ['Completed (UTC)', formatInstant(result.completedAt)],
        ['Duration', formatDuration(result.durationMs)],
        ['Error', orDash(result.error === undefined ? undefined : oneLine(result.error))],
      ]);
      writeLine(io, '');
      for (const line of drawTaskTree(tasks)) writeLine(io, line);
      // A task that took more than one attempt: each of them, as the tree shows only the count and the last error.
      for (const task of tasks.filter((t) => t.attemptHistory.length > 1)) {
        writeLine(io, '');
        writeLine(io, `Attempts of ${task.taskId}:`);
        writeTable(io, ATTEMPT_COLUMNS, task.attemptHistory, '', options.wide);
      }
      const drawnFlat = tasks.some((task) => task.dependsOn === undefined);
      if (drawnFlat) {
        writeLine(io, '');
        writeLine(
          io,
          `(tasks in canonical order: no runner has stored a definition of "${result.workflowName}" with these tasks, so its dependencies are unknown)`,
        );
      } else if (workflow !== undefined && workflow.version !== result.workflowVersion) {
        writeLine(io, '');
        writeLine(
          io,
          `(dependencies drawn from the latest definition, version ${workflow.version}; this execution ran version ${result.workflowVersion})`,
        );
      }
    });

  registerControlCommands(executions, io);
  registerSignalCommand(executions, io);
}

/** `orrery executions signal <id> <name>`: completes the wait task of that execution that waits for `name`. */
function registerSignalCommand(executions: Command, io: CliIo): void {
  databaseCommand(
    executions,
    'signal',
    'Send a signal to an execution: its wait task waiting for that name completes with the payload (a repeat is ignored)',
  )
    .argument('<id>', ID_HELP)
    .argument('<name>', 'the signal, as a wait task names it in waitFor.signal (`orrery executions show` lists them)')
    .option(
      '--payload <json>',
      'what the wait task sets under its id in the context: any JSON value (default null)',
      parseJson,
    )
    .action(async (given: string, name: string, options: CommonOptions & { payload?: Json }) => {
      const id = await withClient(options, {}, async (client) => {
        const id = await resolveId(client, given);
        await client.signal(id, name, options.payload);
        return id;
      });
      if (options.json) writeJson(io, { executionId: id, name, sent: true });
      else writeLine(io, `Sent signal "${name}" to execution ${id}.`);
    });
}

/** What each control verb does, and how its status line reads. */
const CONTROLS = {
  cancel: {
    description: 'Cancel an execution: its unfinished tasks become cancelled, running ones are aborted',
    done: 'Cancelled',
  },
  pause: {
    description: 'Pause an execution: nothing more is claimed, running tasks go back to ready',
    done: 'Paused',
  },
  resume: { description: 'Resume a paused execution: its ready tasks are claimed again', done: 'Resumed' },
} as const;

function registerControlCommands(executions: Command, io: CliIo): void {
  for (const [verb, { description, done }] of Object.entries(CONTROLS)) {
    const command = databaseCommand(executions, verb, `${description} (a no-op when it cannot apply)`).argument(
      '<id>',
      ID_HELP,
    );
    if (verb === 'pause') command.option('--reason <text>', 'why, stored with the execution');
    command.action(async (given: string, options: CommonOptions & { reason?: string }) => {
      const { id, status } = await withClient(options, {}, async (client) => {
        const id = await resolveId(client, given);
        if (verb === 'cancel') await client.cancelExecution(id);
        else if (verb === 'pause') await client.pauseExecution(id, options.reason);
        else await client.resumeExecution(id);
        return { id, status: await client.getExecutionStatus(id) };
      });
      const applied = verb === 'resume' ? status !== 'paused' : status === (verb === 'cancel' ? 'cancelled' : 'paused');
      if (options.json) writeJson(io, { executionId: id, status });
      else if (applied) writeLine(io, `${done} execution ${id}: it is now ${status}.`);
      else writeLine(io, `Execution ${id} is ${status}: nothing to ${verb}.`);
    });
  }
}
