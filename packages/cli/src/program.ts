import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerDashboardCommand } from './commands/dashboard.js';
import { registerExecutionCommands } from './commands/executions.js';
import { registerMigrateCommand } from './commands/migrate.js';
import { registerNextCommand } from './commands/next.js';
import { registerRunCommand } from './commands/run.js';
import { registerRunnersCommand } from './commands/runners.js';
import { registerScheduleCommands } from './commands/schedules.js';
import { registerStatsCommand } from './commands/stats.js';
import { registerWorkerCommand } from './commands/worker.js';
import { registerWorkflowsCommand } from './commands/workflows.js';
import { oneLine, reportFailure } from './failure.js';
import { type CliIo, processIo } from './output.js';

// ../package.json from both src/ and dist/.
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const ENVIRONMENT_HELP = `
Environment:
  ORRERY_DATABASE_URL  default of --database (else sqlite:./orrery.db)
  ORRERY_SCHEMA        default of --schema (Postgres only)
  ORRERY_DEBUG=1       print stack traces of unexpected errors

Exit codes: 0 success, 1 the command failed, 2 the command line is wrong.`;

/**
 * Assembles the `orrery` command. Errors are not printed here: parsing throws (commander's
 * `exitOverride`), and {@link runCli} turns what was thrown into one line and an exit code.
 * @param io where results and errors go; the process's streams by default.
 */
export function buildProgram(io: CliIo = processIo, options: { jsonErrors?: boolean } = {}): Command {
  const program = new Command('orrery')
    .description(
      'Manage Orrery cron schedules and pipeline executions, run workflows, list workflows and runners, preview cron expressions, run workers and the dashboard',
    )
    .version(version, '-V, --version')
    .addHelpText('after', ENVIRONMENT_HELP)
    .showSuggestionAfterError(true)
    // A command's options go before its subcommands (`runners [options]` vs `runners list [options]`).
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      // With --json, usage errors are reported by runCli as JSON instead.
      outputError: (message, write) => {
        if (!options.jsonErrors) write(`${oneLine(message)}\n`);
      },
    });
  // Subcommands copy the settings above when created, so they must come after them.
  registerMigrateCommand(program, io);
  registerScheduleCommands(program, io);
  registerExecutionCommands(program, io);
  registerRunCommand(program, io);
  registerWorkflowsCommand(program, io);
  registerRunnersCommand(program, io);
  registerStatsCommand(program, io);
  registerNextCommand(program, io);
  registerWorkerCommand(program, io);
  registerDashboardCommand(program, io);
  return program;
}

/**
 * Runs `orrery` with the arguments after the program name and resolves with the exit code
 * (see {@link EXIT}); never rejects. Errors are written to `io.stderr` as one line, or with
 * `--json` anywhere on the line as one JSON document `{ "error": { "code", "message" } }`.
 */
export async function runCli(args: readonly string[], io: CliIo = processIo): Promise<number> {
  const json = args.includes('--json');
  try {
    await buildProgram(io, { jsonErrors: json }).parseAsync([...args], { from: 'user' });
    return 0;
  } catch (error) {
    return reportFailure(error, io, json);
  }
}
