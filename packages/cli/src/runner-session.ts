import {
  ExecutionNotFoundError,
  isOrreryError,
  type OrreryError,
  ScheduleNotFoundError,
  WorkflowNotFoundError,
} from '@orreryjs/core';
import type { OrreryClient } from '@orreryjs/runner';
import { type Command, Option } from 'commander';
import { addJsonOption } from './output.js';

/** Options of every command that opens the database. */
export interface DatabaseOptions {
  database: string;
  schema?: string;
}

/** The default database, as for the runner: a SQLite file in the working directory. */
export const DEFAULT_DATABASE = 'sqlite:./orrery.db';

/** Adds `--database` (or ORRERY_DATABASE_URL) and `--schema` (or ORRERY_SCHEMA). */
export function addDatabaseOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--database <url>', "database URL: 'sqlite:./file.db' or 'postgres://user@host:5432/db'")
        .env('ORRERY_DATABASE_URL')
        .default(DEFAULT_DATABASE),
    )
    .addOption(
      new Option('--schema <name>', 'Postgres schema holding the tables (one per tenant)').env('ORRERY_SCHEMA'),
    );
}

/** A subcommand of `parent` that opens the database: `--database`, `--schema` and `--json`. */
export function databaseCommand(parent: Command, name: string, description: string): Command {
  return addJsonOption(addDatabaseOptions(parent.command(name).description(description)));
}

/** How {@link withClient} opens the database. */
export interface SessionOptions {
  /** Apply pending migrations; management commands leave that to `orrery migrate`. @default false */
  migrate?: boolean;
  /**
   * What of a SQLite database must exist already: by default the file, so that a mistyped
   * path creates nothing; `orrery migrate` creates the file but not its folder.
   * @default 'file'
   */
  mustExist?: 'file' | 'folder';
}

/**
 * Opens an OrreryClient (no task code, no loops: workflows are known from the `workflows`
 * table the runners fill), hands it to `use`, and closes it whatever happens.
 * @throws ConfigurationError when the database is unreachable, its schema is out of date, or
 * (SQLite) its file does not exist, and whatever `use` throws (a "not found" error naming
 * the database read, see {@link namingDatabase}).
 */
export async function withClient<T>(
  database: DatabaseOptions,
  session: SessionOptions,
  use: (client: OrreryClient) => Promise<T>,
): Promise<T> {
  const client = await openClient(database, session);
  try {
    return await use(client);
  } catch (error) {
    throw namingDatabase(error, database);
  } finally {
    await client.close();
  }
}

async function openClient(database: DatabaseOptions, session: SessionOptions): Promise<OrreryClient> {
  const { OrreryClient } = await import('@orreryjs/runner');
  return OrreryClient.create({
    database: database.database,
    ...(database.schema === undefined ? {} : { schema: database.schema }),
    migrate: session.migrate ?? false,
    mustExist: session.mustExist ?? 'file',
  });
}

/** A database URL safe to print: the password, if any, is masked. */
export function redactDatabaseUrl(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@/]*@/, '$1***@');
}

/** The "not found" errors, by code: what was looked for is absent from the database read. */
const NOT_FOUND_ERRORS: Readonly<Record<string, new (message: string, options?: { cause?: unknown }) => OrreryError>> =
  {
    EXECUTION_NOT_FOUND: ExecutionNotFoundError,
    SCHEDULE_NOT_FOUND: ScheduleNotFoundError,
    WORKFLOW_NOT_FOUND: WorkflowNotFoundError,
  };

/**
 * `error`, when it says that something was not found, as the same kind of error that also
 * names the database read (password masked), so that a wrong --database or
 * ORRERY_DATABASE_URL is plain: `No pipeline execution has id "…" in sqlite:./orrery.db; …`.
 * Other errors are returned as they are.
 */
export function namingDatabase(error: unknown, database: DatabaseOptions): unknown {
  const NotFound = isOrreryError(error) ? NOT_FOUND_ERRORS[error.code] : undefined;
  if (NotFound === undefined) return error;
  const where = `${redactDatabaseUrl(database.database)}${database.schema === undefined ? '' : ` (schema ${database.schema})`}`;
  const message = (error as OrreryError).message;
  // `No <thing> has <key> "<value>"…` (executions, schedules) and the workflow message's
  // "on this database" say where; a message of neither form gets the database at its end.
  const named = /^No [^"]* "(?:[^"\\]|\\.)*"/.exec(message);
  const located =
    named !== null
      ? `${named[0]} in ${where}${message.slice(named[0].length)}`
      : message.includes('on this database')
        ? message.replace('on this database', `on ${where}`)
        : `${message} (database: ${where})`;
  return new NotFound(located, { cause: error });
}
