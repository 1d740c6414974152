import {
  ConfigurationError,
  DatabaseError,
  type ListenOption,
  type Logger,
  type OpenStorageOptions,
  POOL_DEFAULTS,
  type PoolOptions,
  type ResolvedPoolOptions,
  resolveListenOption,
  resolvePoolOptions,
  type Storage,
  silentLogger,
  validateApplicationName,
  validateSchemaName,
} from '@orreryjs/core';
import pg from 'pg';
import { assertIsoDateStyle } from './codec.js';
import { PostgresCronStore } from './cron-store/index.js';
import { PostgresExecutionStore } from './execution-store/index.js';
import { applyMigrations, assertSchemaCurrent } from './migrate.js';
import { PostgresRunnerStore } from './runner-store/index.js';
import { tablesIn } from './schema.js';
import { createHandle, sqlState, toOrreryError, withClient } from './transaction.js';
import { PostgresWakeUps } from './wake-up.js';
import { PostgresWorkflowStore } from './workflow-store/index.js';

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
   * Connection pool: size, connect and idle timeouts, statement timeout.
   * @default { max: 10, connectionTimeoutMs: 10_000, idleTimeoutMs: 30_000 } (no statement timeout)
   */
  pool?: PoolOptions;
  /**
   * `application_name` of every connection, shown in `pg_stat_activity`: 1-63 printable ASCII characters.
   * @default 'orrery'
   */
  applicationName?: string;
  /**
   * Send named prepared statements, so that each connection parses and plans a statement once.
   * Set false behind a transaction pooler that cannot route them (PgBouncer before 1.21 in
   * `pool_mode = transaction`): every statement is then sent unnamed, and planned per call.
   * With named statements each pooled connection also turns `enable_seqscan` and `jit` off for
   * its session (see {@link PLAN_SETTINGS}).
   * @default true
   */
  preparedStatements?: boolean;
  /**
   * Listen for other processes' work (LISTEN/NOTIFY on channel `orrery.<schema>`, one extra
   * connection named `<applicationName>:listen`) and expose it as `Storage.wakeUps`: `true` on
   * `connectionString`; `{ database }` on a direct URL, when `connectionString` goes through a
   * transaction pooler (which cannot hold a LISTEN); `false` for none (polling only).
   * @default true
   */
  listen?: ListenOption;
  /** Where the listen connection reports being lost and re-established. @default silent */
  logger?: Logger;
}

/** Defaults of {@link PostgresStorageOptions}. */
export const POSTGRES_DEFAULTS = Object.freeze({
  schema: 'public',
  migrate: true,
  pool: POOL_DEFAULTS,
  applicationName: 'orrery',
  preparedStatements: true,
  listen: true,
});

/**
 * Session setting of each pooled connection when statements are named. Postgres plans a named
 * statement for its parameters' values five times, then keeps a generic plan for the life of
 * the connection, planned with the statistics of that moment. On a schema created minutes ago
 * (a fresh install, a benchmark) those say that `pipeline_executions` holds a few hundred rows,
 * and the kept plans of claim and finish scan it whole for every call, however large it grows
 * until the next ANALYZE (bench/README.md: 3× the buffers per claim on 1,000 pipelines).
 * Every access path of Orrery's statements is an index, so the planner is told never to prefer
 * a sequential scan: a plan kept from an almost empty table stays right when the table is large.
 * JIT compilation goes off with it: a sequential scan that no index can replace (the retention
 * sweep's) is then costed above `jit_above_cost`, and Postgres compiled and optimised that
 * statement with LLVM on every call (200 ms of a core per sweep, seen in pg_stat_statements);
 * no statement of Orrery's runs long enough for compiled expressions to pay back.
 * Unnamed statements (behind a transaction pooler, where a session setting would leak to
 * other clients) are planned per call with the table's current size and need no setting.
 */
export const PLAN_SETTINGS = 'SET enable_seqscan = off; SET jit = off';

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
 * Refuses a URL that cannot be parsed. Nothing is added to it: no startup parameter (no
 * `options`, which PgBouncer refuses), since every statement names its schema and the codec
 * reads instants in any time zone.
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

interface ResolvedOptions {
  schema: string;
  migrate: boolean;
  pool: ResolvedPoolOptions;
  applicationName: string;
  preparedStatements: boolean;
  listen: ListenOption;
}

function validateOptions(options: PostgresStorageOptions): ResolvedOptions {
  const { connectionString } = options;
  if (
    typeof connectionString !== 'string' ||
    !(connectionString.startsWith('postgres://') || connectionString.startsWith('postgresql://'))
  ) {
    throw new ConfigurationError(
      `PostgreSQL connection string ${JSON.stringify(typeof connectionString === 'string' ? redact(connectionString) : connectionString)} is invalid; use postgres://user:password@host:5432/database.`,
    );
  }
  const preparedStatements = options.preparedStatements ?? POSTGRES_DEFAULTS.preparedStatements;
  if (typeof preparedStatements !== 'boolean') {
    throw new ConfigurationError(
      `preparedStatements must be true or false, got ${JSON.stringify(preparedStatements)}; use false behind PgBouncer in transaction mode.`,
    );
  }
  assertParsableUrl(connectionString);
  return {
    preparedStatements,
    schema: validateSchemaName(options.schema ?? POSTGRES_DEFAULTS.schema),
    migrate: options.migrate ?? POSTGRES_DEFAULTS.migrate,
    pool: resolvePoolOptions(options.pool),
    applicationName: validateApplicationName(options.applicationName ?? POSTGRES_DEFAULTS.applicationName),
    listen: resolveListenOption(options.listen ?? POSTGRES_DEFAULTS.listen),
  };
}

/** True when pg gave up on a connection because its connect timeout ran out. */
function isConnectTimeout(error: unknown): boolean {
  // pg-pool: "Connection terminated due to connection timeout"; pg's client: "timeout expired".
  for (let e = error; e instanceof Error; e = e.cause) {
    if (/connection timeout|timeout expired|timeout exceeded when trying to connect/.test(e.message)) return true;
  }
  return false;
}

/** A connection failure at open, as the error that tells the user what to fix. */
function connectionError(connectionString: string, connectionTimeoutMs: number, error: unknown): Error {
  if (isConnectTimeout(error)) {
    const url = new URL(connectionString);
    const host = url.hostname === '' ? 'localhost' : url.hostname;
    return new DatabaseError(
      `PostgreSQL at host ${host}, port ${url.port === '' ? '5432' : url.port} did not answer within connectionTimeoutMs ${connectionTimeoutMs} ms. Check that the server is up and not overloaded, that the host and port are right, or raise pool.connectionTimeoutMs.`,
      { cause: error },
    );
  }
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
 * state, so a transaction pooler may hand each transaction another server connection), then
 * applies pending migrations under an advisory lock on the schema name (or, with
 * `migrate: false`, checks that none is pending), then (unless `listen: false`) opens the listen
 * connection behind `Storage.wakeUps`. Several processes may open one schema at once.
 * @throws ConfigurationError for an invalid schema name, pool option, application name, listen
 *   option or URL, a server that refuses the connection or the login (the listen URL's included),
 *   or (with `migrate: false`) a schema older than the code.
 * @throws DatabaseError naming host, port and timeout when the server does not answer within
 *   `pool.connectionTimeoutMs`, or when a migration fails (a connection lost midway included).
 */
export async function openPostgresStorage(options: PostgresStorageOptions): Promise<Storage> {
  const { schema, migrate, pool: poolOptions, applicationName, preparedStatements, listen } = validateOptions(options);
  // The catalog queries of the migration plan badly without sequential scans (200 ms instead of 50 to
  // open): the first connection takes the setting only once they are done.
  let migrated = false;
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: poolOptions.max,
    connectionTimeoutMillis: poolOptions.connectionTimeoutMs,
    idleTimeoutMillis: poolOptions.idleTimeoutMs,
    ...(poolOptions.statementTimeoutMs === undefined ? {} : { statement_timeout: poolOptions.statementTimeoutMs }),
    application_name: applicationName,
    // Idle pooled connections must not keep a script alive that never calls close().
    allowExitOnIdle: true,
    // Awaited before a new connection is handed out; a failure fails that checkout, and the connection is closed.
    ...(preparedStatements && {
      onConnect: (client: pg.ClientBase) => (migrated ? client.query(PLAN_SETTINGS) : undefined),
    }),
  });
  // An idle connection that the server drops emits 'error' on the pool, which would crash the process
  // without a listener; the pool discards that connection and the next query opens a fresh one.
  pool.on('error', () => undefined);
  // A last line of defence, for the whole life of every connection: a server that drops a connection
  // at the wrong moment (between the pool's own listener and a caller's, seen under load with
  // pg_terminate_backend) must never crash the process. The statement in flight still fails, and the
  // pool discards the connection, which pg marks not queryable.
  pool.on('connect', (client) => client.on('error', () => undefined));
  let connected = false;
  try {
    await withClient(pool, async (client) => {
      connected = true;
      await assertIsoDateStyle(client);
      if (migrate) await applyMigrations(client, schema);
      else await assertSchemaCurrent(client, schema);
      if (preparedStatements) await client.query(PLAN_SETTINGS);
      migrated = true;
    });
  } catch (error) {
    await pool.end().catch(() => undefined);
    if (!connected) throw connectionError(options.connectionString, poolOptions.connectionTimeoutMs, error);
    if (sqlState(error) === '42501') {
      throw new ConfigurationError(
        `PostgreSQL user in ${redact(options.connectionString)} may not create or migrate schema "${schema}": ${(error as Error).message}. Grant it CREATE on the database (or on the schema), or migrate once as a user who may.`,
        { cause: error },
      );
    }
    throw toOrreryError('openPostgresStorage', error);
  }
  let wakeUps: PostgresWakeUps | undefined;
  if (listen !== false) {
    const listenUrl = listen === true ? options.connectionString : listen.database;
    const logger = options.logger ?? silentLogger;
    wakeUps = new PostgresWakeUps({
      connectionString: listenUrl,
      schema,
      applicationName,
      connectionTimeoutMs: poolOptions.connectionTimeoutMs,
      logger,
    });
    try {
      await wakeUps.start();
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw connectionError(listenUrl, poolOptions.connectionTimeoutMs, error);
    }
  }
  const handle = createHandle(pool, tablesIn(schema), preparedStatements);
  let closed: Promise<void> | undefined;
  return {
    dialect: 'postgres',
    executions: new PostgresExecutionStore(handle),
    cron: new PostgresCronStore(handle),
    runners: new PostgresRunnerStore(handle),
    workflows: new PostgresWorkflowStore(handle),
    ...(wakeUps && { wakeUps }),
    close: () => {
      closed ??= Promise.all([wakeUps?.close(), pool.end()]).then(() => undefined);
      return closed;
    },
  };
}
