import type { RunnerInfo } from '@orreryjs/runner';
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

// Without --wide: no Started column; id, host and workflows cut to fit.
const RUNNER_COLUMNS: readonly Column<RunnerInfo>[] = [
  { header: 'ID', cell: (r) => r.id, shrinks: true },
  { header: 'Host', cell: (r) => `${r.hostname}:${r.pid}`, shrinks: true },
  { header: 'State', cell: (r) => (r.stoppedAt !== null ? 'stopped' : r.alive ? 'alive' : 'silent') },
  { header: 'Workflows', cell: (r) => r.workflows.join(', '), shrinks: true },
  { header: 'Started (UTC)', cell: (r) => formatInstant(r.startedAt), wideOnly: true },
  { header: 'Heartbeat (UTC)', cell: (r) => formatInstant(r.heartbeatAt) },
];

/**
 * `orrery runners list` (and `orrery runners`, its alias): the runner processes on this
 * database, and whether each is alive.
 */
export function registerRunnersCommand(program: Command, io: CliIo): void {
  const description = 'List runner processes: alive, or silent (no heartbeat for 30 s)';
  const runners = listRunners(databaseCommand(program, 'runners', `${description}; alias of \`runners list\``), io);
  // The alias's options come before `list`, so that `runners list --database …` reaches `list`.
  runners.enablePositionalOptions();
  listRunners(databaseCommand(runners, 'list', description), io);
}

function listRunners(command: Command, io: CliIo): Command {
  return addWideOption(command, 'no Started, id, host and workflows cut')
    .option('--all', 'include runners that shut down, and those silent for over a day')
    .action(async (options: DatabaseOptions & OutputOptions & { all?: boolean }) => {
      const runners = await withClient(options, {}, (client) =>
        client.listRunners({ includeStopped: options.all === true }),
      );
      if (options.json) writeJson(io, runners);
      else writeTable(io, RUNNER_COLUMNS, runners, 'No runners.', options.wide);
    });
}
