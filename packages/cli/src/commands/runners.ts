import type { RunnerInfo } from '@orreryjs/runner';
import type { Command } from 'commander';
import { type CliIo, type Column, formatInstant, type OutputOptions, writeJson, writeTable } from '../output.js';
import { type DatabaseOptions, databaseCommand, withClient } from '../runner-session.js';

const RUNNER_COLUMNS: readonly Column<RunnerInfo>[] = [
  { header: 'ID', cell: (r) => r.id },
  { header: 'Host', cell: (r) => `${r.hostname}:${r.pid}` },
  { header: 'State', cell: (r) => (r.stoppedAt !== null ? 'stopped' : r.alive ? 'alive' : 'silent') },
  { header: 'Workflows', cell: (r) => r.workflows.join(', ') },
  { header: 'Started (UTC)', cell: (r) => formatInstant(r.startedAt) },
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
  return command
    .option('--all', 'include runners that shut down')
    .action(async (options: DatabaseOptions & OutputOptions & { all?: boolean }) => {
      const runners = await withClient(options, {}, (client) =>
        client.listRunners({ includeStopped: options.all === true }),
      );
      if (options.json) writeJson(io, runners);
      else writeTable(io, RUNNER_COLUMNS, runners, 'No runners.');
    });
}
