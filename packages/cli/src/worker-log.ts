import type { Logger } from '@orreryjs/core';
import type { DefaultRunner } from '@orreryjs/runner';
import { pino } from 'pino';
import { prettyFactory } from 'pino-pretty';
import type { CliIo } from './output.js';

/** pino's levels, most verbose first, and `silent`. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** `pretty`: human-readable lines; `json`: one JSON object per line; `auto`: pretty on a terminal, else JSON. */
export const LOG_FORMATS = ['auto', 'pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** The pino logger a worker writes through, and that the runner is given for its own logs. */
export type WorkerLogger = pino.Logger;

/**
 * A pino logger writing to `io.stdout`: human-readable (pino-pretty) when `format` is
 * `pretty`, or `auto` on a terminal; one JSON object per line otherwise, with ISO times.
 */
export function createWorkerLogger(io: CliIo, level: LogLevel, format: LogFormat, isTerminal: boolean): WorkerLogger {
  const pretty = format === 'pretty' || (format === 'auto' && isTerminal);
  const prettify = pretty
    ? prettyFactory({
        colorize: isTerminal,
        translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l o',
        ignore: 'pid,hostname,event',
      })
    : undefined;
  const destination = {
    write: (line: string) => io.stdout(prettify === undefined ? line : prettify(line)),
  };
  return pino({ level, timestamp: pino.stdTimeFunctions.isoTime, base: undefined }, destination);
}

/** The runner's logger interface over a pino logger: the library logs (loop failures, recoveries) through it. */
export function asLibraryLogger(logger: WorkerLogger): Logger {
  return logger as unknown as Logger;
}

type Level = 'debug' | 'info' | 'warn' | 'error';

/**
 * How each runner event is logged. Routine events are `info` (`debug` with --quiet); what an
 * operator must see is `warn` or `error` whatever --quiet says: failures, lost and abandoned
 * occurrences. Each line has `event` and the payload's scalar fields; task failures add `err`
 * with the stack.
 */
const EVENT_LEVELS: Record<string, (payload: Record<string, unknown>) => Level | 'routine'> = {
  'pipeline:completed': () => 'routine',
  'pipeline:cancelled': () => 'routine',
  'pipeline:failed': () => 'error',
  'task:completed': () => 'routine',
  'task:skipped': () => 'routine',
  'task:failed': (payload) => (payload.willRetry === true ? 'warn' : 'error'),
  'cron:fired': () => 'routine',
  'cron:skipped': () => 'routine',
  'cron:buffered': () => 'routine',
  'cron:missed': () => 'warn',
  'cron:paused': () => 'warn',
  'cron:lost': () => 'warn',
  'cron:recovered': () => 'info',
  'cron:abandoned': () => 'error',
};

/** Subscribes to the runner's events and logs each one (see {@link EVENT_LEVELS}). */
export function logRunnerEvents(runner: DefaultRunner, logger: WorkerLogger, quiet: boolean): void {
  // The runner's event map is typed per event; here every payload is handled alike.
  const emitter = runner as unknown as { on(event: string, listener: (payload: unknown) => void): unknown };
  for (const [event, levelOf] of Object.entries(EVENT_LEVELS)) {
    emitter.on(event, (payload) => {
      const fields = typeof payload === 'object' && payload !== null ? (payload as Record<string, unknown>) : {};
      const level = levelOf(fields);
      const line: Record<string, unknown> = { event, ...flatten(fields) };
      if (event === 'task:failed') {
        delete line.error;
        line.err = taskError(fields);
      }
      logger[level === 'routine' ? (quiet ? 'debug' : 'info') : level](line, event);
    });
  }
}

/** A task failure as pino serialises errors: type, message and stack. */
function taskError(fields: Record<string, unknown>): { type: string; message: string; stack: string } {
  // A task's stored error is its message, then its stack frames: the message is the first line.
  const text = String(fields.error ?? '');
  const message = text.split('\n', 1)[0] ?? '';
  const stack = typeof fields.stack === 'string' ? fields.stack : text;
  return { type: 'Error', message, stack };
}

/** Scalar fields only (dates as ISO): contexts and results stay out of the log. */
export function flatten(fields: Record<string, unknown>): Record<string, string | number | boolean | null> {
  const flat: Record<string, string | number | boolean | null> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (key === 'stack') continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') flat[key] = value;
    else if (value instanceof Date) flat[key] = value.toISOString();
    else if (value instanceof Error) flat[key] = value.message;
  }
  return flat;
}
