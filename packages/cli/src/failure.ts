import { CommanderError } from 'commander';
import type { CliIo } from './output.js';

/** Exit codes of the `orrery` command. */
export const EXIT = {
  /** The command did what was asked. */
  ok: 0,
  /** The command was understood but failed: unknown schedule, invalid cron expression, database error, … */
  failure: 1,
  /** The command line itself was wrong: unknown command or option, missing or malformed argument. */
  usage: 2,
} as const;

/**
 * Reports an error that ended a command as one line on stderr and returns the exit code.
 * Commander has already printed its own usage errors (see {@link oneLine}); Orrery errors
 * print their actionable message; anything else is a bug or an environment problem, and
 * prints its message too (set ORRERY_DEBUG=1 for the stack).
 */
export function reportFailure(error: unknown, io: CliIo): number {
  if (error instanceof CommanderError) {
    // Help and version output also arrive here, as "errors" with exit code 0.
    if (error.exitCode === 0) return EXIT.ok;
    return error.code === 'commander.help' || error.code === 'commander.executeSubCommandAsync'
      ? error.exitCode
      : EXIT.usage;
  }
  if (process.env.ORRERY_DEBUG && error instanceof Error && error.stack) io.stderr(`${error.stack}\n`);
  const message = error instanceof Error ? error.message : String(error);
  io.stderr(`error: ${oneLine(message)}\n`);
  return EXIT.failure;
}

/** Folds a multi-line message (commander's "Did you mean" hints, driver errors) onto one line. */
export function oneLine(message: string): string {
  return message
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join(' ');
}
