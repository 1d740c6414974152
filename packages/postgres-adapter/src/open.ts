import { ConfigurationError, type OpenStorageOptions, type Storage, validateSchemaName } from '@orreryjs/core';
import pg from 'pg';
import { assertIsoDateStyle } from './codec.js';
import { PostgresCronStore } from './cron-store/index.js';
import { PostgresExecutionStore } from './execution-store/index.js';
import { applyMigrations, assertSchemaCurrent } from './migrate.js';
import { PostgresRunnerStore } from './runner-store/index.js';
import { tablesIn } from './schema.js';
import { createHandle, sqlState, toOrreryError } from './transaction.js';

/** Options of {@link openPostgresStorage}. */
export interface PostgresStorageOptions extends OpenStorageOptions {
  /** `postgres://user:password@host:5432/database` (also `postgresql://`); the user is the one named here. */
  connectionString: string;
  /**
   * The schema holding Orrery's tables, one per tenant: lower-case letters, digits and `_`.
   * Created on open when missing (with `migrate: true`).
   * @default 'public'
   */
  schema?: string;
  /**
   * Apply pending migrations on open (under an advisory lock on the schema name, so that
   * instances starting together take turns); when false, a schema older than the code is refused.
   * @default true
   */
  migrate?: boolean;
  /**
   * Most connections the storage holds open at once.
   * @default 10
   */
  poolSize?: number;
  /**
   * Send named prepared statements, so that each connection parses a statement once. Set false
   * behind a transaction pooler that cannot route them (PgBouncer before 1.21 in
   * `pool_mode = transaction`): every statement is then sent unnamed.
   * @default true
   */
  preparedStatements?: boolean;
}

/** Defaults of {@link PostgresStorageOptions}. */
export const POSTGRES_DEFAULTS = { schema: 'public', migrate: true, poolSize: 10, preparedStatements: true } as const;

/** SQLSTATEs of a refused login: the URL names a user, password or database the server does not accept. */
const CONFIGURATION_STATES: Record<string, string> = {
  '28000': 'the server refused this user',
  '28P01': 'the password was refused',
  '3D000': 'the database does not exist',
};

/** The URL without its password, for messages. */
function redact(connectionString: string): string {
  return connectionString.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@');
}

/**
 * Refuses a URL that cannot be parsed. Nothing is added to it: no session setting (no
 * `options` startup parameter, which PgBouncer refuses), since every statement names its
 * schema and the codec reads instants in any time zone.
 * @throws ConfigurationError naming the URL without its password.
 */
function assertParsableUrl(connectionString: string): void {
  try {
    new URL(connectionString);
  } catch (error) {
    throw new ConfigurationError(
      `PostgreSQL URL "${redact(connectionString)}" cannot be parsed; use postgres://user:password@host:5432/database.`,
      { cause: error },
    );
  }
}

function validateOptions(options: PostgresStorageOptions): {
  schema: string;
  migrate: boolean;
  poolSize: number;
  preparedStatements: boolean;
} {
  const { connectionString } = options;
  if (
    typeof connectionString !== 'string' ||
    !(connectionString.startsWith('postgres://') || connectionString.startsWith('postgresql://'))
  ) {
    throw new ConfigurationError(
      `PostgreSQL connection string ${JSON.stringify(typeof connectionString === 'string' ? redact(connectionString) : connectionString)} is invalid; use postgres://user:password@host:5432/database.`,
    );
  }
  const schema = validateSchemaName(options.schema ?? POSTGRES_DEFAULTS.schema);
  const poolSize = options.poolSize ?? POSTGRES_DEFAULTS.poolSize;
  if (!Number.isInteger(poolSize) || poolSize < 1) {
    throw new ConfigurationError(`poolSize must be a positive integer number of connections, got ${poolSize}.`);
  }
  const preparedStatements = options.preparedStatements ?? POSTGRES_DEFAULTS.preparedStatements;
  if (typeof preparedStatements !== 'boolean') {
    throw new ConfigurationError(
      `preparedStatements must be true or false, got ${JSON.stringify(preparedStatements)}; use false behind PgBouncer in transaction mode.`,
    );
  }
  assertParsableUrl(connectionString);
  return { schema, migrate: options.migrate ?? POSTGRES_DEFAULTS.migrate, poolSize, preparedStatements };
}

/** A connection failure at open, as the error that tells the user what to fix. */
function connectionError(connectionString: string, error: unknown): Error {
  const reason = CONFIGURATION_STATES[sqlState(error) ?? ''];
  const message = error instanceof Error ? error.message : String(error);
  const what = reason === undefined ? message : `${reason} (${message})`;
  return new ConfigurationError(
    `Cannot connect to PostgreSQL at ${redact(connectionString)}: ${what}. Check that the server is running and reachable, and that the URL names an existing database and a user allowed to log in to it.`,
    { cause: error },
  );
}

/**
 * Opens PostgreSQL as Orrery storage: a pool whose statements all name `schema` (no session
 * state, so a transaction pooler may hand each transaction another server connection), then applies pending migrations under an advisory lock on the schema name (or, with
 * `migrate: false`, checks that none is pending). Several processes may open one schema at once.
 * @throws ConfigurationError for an invalid schema name, pool size or URL, a server that cannot
 *   be reached or refuses the login, or (with `migrate: false`) a schema older than the code.
 * @throws DatabaseError when a migration fails.
 */
export async function openPostgresStorage(options: PostgresStorageOptions): Promise<Storage> {
  const { schema, migrate, poolSize, preparedStatements } = validateOptions(options);
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: poolSize,
    application_name: 'orrery',
  });
  // An idle connection that the server drops emits 'error' on the pool, which would crash the process
  // without a listener; the pool discards that connection and the next query opens a fresh one.
  pool.on('error', () => undefined);
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw connectionError(options.connectionString, error);
  }
  try {
    await assertIsoDateStyle(client);
    if (migrate) await applyMigrations(client, schema);
    else await assertSchemaCurrent(client, schema);
  } catch (error) {
    client.release();
    await pool.end().catch(() => undefined);
    if (sqlState(error) === '42501') {
      throw new ConfigurationError(
        `PostgreSQL user in ${redact(options.connectionString)} may not create or migrate schema "${schema}": ${(error as Error).message}. Grant it CREATE on the database (or on the schema), or migrate once as a user who may.`,
        { cause: error },
      );
    }
    throw toOrreryError('openPostgresStorage', error);
  }
  client.release();
  const handle = createHandle(pool, tablesIn(schema), preparedStatements);
  let closed: Promise<void> | undefined;
  return {
    dialect: 'postgres',
    executions: new PostgresExecutionStore(handle),
    cron: new PostgresCronStore(handle),
    runners: new PostgresRunnerStore(handle),
    close: () => {
      closed ??= pool.end();
      return closed;
    },
  };
}
