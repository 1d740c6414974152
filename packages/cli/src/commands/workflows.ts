import type { WorkflowInfo } from '@orreryjs/runner';
import type { Command } from 'commander';
import { concurrencyText, GROUP_COLUMNS, priorityOf } from '../flow-control-view.js';
import {
  addWideOption,
  type CliIo,
  type Column,
  formatInstant,
  type OutputOptions,
  writeJson,
  writeTable,
} from '../output.js';
import { type DatabaseOptions, databaseCommand, withClient } from '../runner-session.js';

// Without --wide: no Registered column; name, version, tasks and concurrency cut to fit.
const WORKFLOW_COLUMNS: readonly Column<WorkflowInfo>[] = [
  { header: 'Name', cell: (w) => w.name, shrinks: true },
  { header: 'Version', cell: (w) => w.version, shrinks: true },
  { header: 'Tasks', cell: (w) => w.tasks.map((t) => t.id).join(', '), shrinks: true },
  { header: 'Priority', cell: priorityOf },
  { header: 'Concurrency', cell: concurrencyText, shrinks: true },
  { header: 'Registered (UTC)', cell: (w) => formatInstant(w.registeredAt), wideOnly: true },
  { header: 'Last seen (UTC)', cell: (w) => formatInstant(w.lastSeenAt) },
];

/**
 * `orrery workflows list` (and `orrery workflows`, its alias): the workflow versions runners
 * registered, which the other commands accept by name; `orrery workflows groups`: how full
 * their concurrency groups are.
 */
export function registerWorkflowsCommand(program: Command, io: CliIo): void {
  const description = 'List the workflows runners registered, each version with its tasks, priority and concurrency';
  const workflows = listWorkflows(
    databaseCommand(program, 'workflows', `${description}; alias of \`workflows list\``),
    io,
  );
  // The alias's options come before a subcommand, so that `workflows list --database …` reaches `list`.
  workflows.enablePositionalOptions();
  listWorkflows(databaseCommand(workflows, 'list', description), io);
  addWideOption(
    databaseCommand(
      workflows,
      'groups',
      'List the concurrency groups with unfinished executions: active of the limit, and queued',
    ),
    'group and workflow cut',
  )
    .argument('[workflow]', 'only the groups of this workflow')
    .action(async (workflowName: string | undefined, options: DatabaseOptions & OutputOptions) => {
      const groups = await withClient(options, {}, (client) =>
        client.listConcurrencyGroups(workflowName === undefined ? {} : { workflowName }),
      );
      if (options.json) writeJson(io, groups);
      else writeTable(io, GROUP_COLUMNS, groups, 'No concurrency group has unfinished executions.', options.wide);
    });
}

function listWorkflows(command: Command, io: CliIo): Command {
  return addWideOption(command, 'no Registered, name, version, tasks and concurrency cut').action(
    async (options: DatabaseOptions & OutputOptions) => {
      const workflows = await withClient(options, {}, (client) => client.listWorkflows());
      if (options.json) writeJson(io, workflows);
      else
        writeTable(io, WORKFLOW_COLUMNS, workflows, 'No workflows: start a worker that registers some.', options.wide);
    },
  );
}
