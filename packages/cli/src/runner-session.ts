import { ConfigurationError, isOrreryError, type Workflow } from '@orreryjs/core';
import type { DefaultRunner } from '@orreryjs/runner';
import { type Command, Option } from 'commander';
import { collect } from './arguments.js';
import { addJsonOption } from './output.js';

/** Options of every command that opens the database. */
export interface DatabaseOptions {
  database: string;
  schema?: string;
}

/** Options of the commands that need workflow definitions. */
export interface ModuleOptions {
  module?: string[];
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

/** Adds `--module <path>` (repeatable, or ORRERY_MODULE): modules whose exports include workflows. */
export function addModuleOption(command: Command): Command {
  return command.addOption(
    new Option('--module <path>', 'module exporting the workflow definitions (repeatable)')
      .env('ORRERY_MODULE')
      .argParser(collect),
  );
}

/** How {@link withRunner} opens the runner. */
export interface SessionOptions {
  workflows?: Workflow[];
  /** Apply pending migrations; management commands leave that to `orrery migrate`. @default false */
  migrate?: boolean;
}

/**
 * Opens a runner for management (no scheduler, no task loop: `start()` is never called),
 * hands it to `use`, and closes it whatever happens.
 * @throws ConfigurationError when the database is unreachable or its schema is out of date
 * (with a hint to run `orrery migrate`), and whatever `use` throws.
 */
export async function withRunner<T>(
  database: DatabaseOptions,
  session: SessionOptions,
  use: (runner: DefaultRunner) => Promise<T>,
): Promise<T> {
  const runner = await openRunner(database, session);
  try {
    return await use(runner);
  } finally {
    await runner.shutdown();
  }
}

/**
 * The runner class, loaded on first use: `next` and `--help` then start without loading the
 * runner, its database adapters and their drivers.
 */
export async function loadRunnerClass(): Promise<typeof DefaultRunner> {
  return (await import('@orreryjs/runner')).DefaultRunner;
}

async function openRunner(database: DatabaseOptions, session: SessionOptions): Promise<DefaultRunner> {
  const DefaultRunner = await loadRunnerClass();
  try {
    return await DefaultRunner.create({
      database: database.database,
      ...(database.schema === undefined ? {} : { schema: database.schema }),
      workflows: session.workflows ?? [],
      enableCronScheduling: false,
      migrate: session.migrate ?? false,
    });
  } catch (error) {
    // The runner's advice ("open it with migrate: true") is for code; say what to type instead.
    if (isOrreryError(error, 'CONFIGURATION') && /migrat/i.test(error.message) && !session.migrate) {
      throw new ConfigurationError(`${error.message} With the CLI: orrery migrate --database <url>.`, {
        cause: error,
      });
    }
    throw error;
  }
}

/** A database URL safe to print: the password, if any, is masked. */
export function redactDatabaseUrl(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@/]*@/, '$1***@');
}
