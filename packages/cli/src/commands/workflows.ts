import type { WorkflowInfo } from '@orreryjs/runner';
import type { Command } from 'commander';
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

// Without --wide: no Registered column; name, version and tasks cut to fit.
const WORKFLOW_COLUMNS: readonly Column<WorkflowInfo>[] = [
  { header: 'Name', cell: (w) => w.name, shrinks: true },
  { header: 'Version', cell: (w) => w.version, shrinks: true },
  { header: 'Tasks', cell: (w) => w.tasks.map((t) => t.id).join(', '), shrinks: true },
  { header: 'Registered (UTC)', cell: (w) => formatInstant(w.registeredAt), wideOnly: true },
  { header: 'Last seen (UTC)', cell: (w) => formatInstant(w.lastSeenAt) },
];

/** `orrery workflows`: the workflow versions runners registered, which the other commands accept by name. */
export function registerWorkflowsCommand(program: Command, io: CliIo): void {
  addWideOption(
    databaseCommand(program, 'workflows', 'List the workflows runners registered, each version with its tasks'),
    'no Registered, name, version and tasks cut',
  ).action(async (options: DatabaseOptions & OutputOptions) => {
    const workflows = await withClient(options, {}, (client) => client.listWorkflows());
    if (options.json) writeJson(io, workflows);
    else writeTable(io, WORKFLOW_COLUMNS, workflows, 'No workflows: start a worker that registers some.', options.wide);
  });
}
