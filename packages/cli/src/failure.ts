import { CommanderError } from 'commander';
import { withCliAdvice } from './advice.js';
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
 * Thrown by a command that already reported its outcome (on stdout) and only needs a
 * non-zero exit code: `run --wait` on a pipeline that failed.
 */
export class ExitWithCode extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
  }
}

/**
 * A command line found wrong only once the database was read (an id prefix that several
 * executions share): reported as usage errors are, exit code 2, with its message.
 */
export class UsageError extends Error {}

/**
 * Reports an error that ended a command on stderr and returns the exit code: one line
 * `error: <message>`, or with `json` one document `{ "error": { "code", "message" } }`.
 * Commander's usage errors are printed by commander in text mode (see {@link oneLine}) and
 * here in JSON mode (code `USAGE`); Orrery errors print their actionable message, with the
 * library's advice to code replaced by flags and commands; anything else is a bug or an
 * environment problem, and prints its message too (set ORRERY_DEBUG=1 for the stack).
 */
export function reportFailure(error: unknown, io: CliIo, json = false): number {
  if (error instanceof ExitWithCode) return error.exitCode;
  if (error instanceof CommanderError) {
    // Help and version output also arrive here, as "errors" with exit code 0.
    if (error.exitCode === 0) return EXIT.ok;
    if (error.code === 'commander.help' || error.code === 'commander.executeSubCommandAsync') return error.exitCode;
    if (json) writeJsonError(io, 'USAGE', error.message.replace(/^error: /, ''));
    return EXIT.usage;
  }
  if (error instanceof UsageError) {
    if (json) writeJsonError(io, 'USAGE', error.message);
    else io.stderr(`error: ${oneLine(error.message)}\n`);
    return EXIT.usage;
  }
  if (process.env.ORRERY_DEBUG && error instanceof Error && error.stack) io.stderr(`${error.stack}\n`);
  const message = withCliAdvice(error instanceof Error ? error.message : String(error));
  if (json) writeJsonError(io, errorCode(error), message);
  else io.stderr(`error: ${oneLine(message)}\n`);
  return EXIT.failure;
}

function writeJsonError(io: CliIo, code: string, message: string): void {
  io.stderr(`${JSON.stringify({ error: { code, message: oneLine(message) } })}\n`);
}

/** An Orrery error's `code` (or a driver's), else `ERROR`. */
function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code !== '' ? code : 'ERROR';
}

/** Folds a multi-line message (commander's "Did you mean" hints, driver errors) onto one line. */
export function oneLine(message: string): string {
  return message
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join(' ');
}
