import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigurationError, type OpenStorageOptions, type Storage, sleep } from '@orreryjs/core';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { SqliteCronStore } from './cron-store/index.js';
import { SqliteExecutionStore } from './execution-store/index.js';
import { applyMigrations, assertSchemaCurrent } from './migrate.js';
import { SqliteRunnerStore } from './runner-store/index.js';
import * as schema from './schema.js';
import { createHandle, toOrreryError } from './transaction.js';
import { SqliteWorkflowStore } from './workflow-store/index.js';

/** Options of {@link openSqliteStorage}. */
export interface SqliteStorageOptions extends OpenStorageOptions {
  /** Path of the database file (its directory is created if missing), or ':memory:' for a private in-memory database. */
  filename: string;
  /**
   * Apply pending migrations on open; when false, a file whose schema is older than the code is refused.
   * @default true
   */
  migrate?: boolean;
  /**
   * How long a statement waits for another connection's write lock before failing.
   * @default 5000
   */
  busyTimeoutMs?: number;
}

/** Defaults of {@link SqliteStorageOptions}. */
export const SQLITE_DEFAULTS = { migrate: true, busyTimeoutMs: 5000 } as const;

const IN_MEMORY = ':memory:';

/** Pause between attempts to open a file another process is switching to WAL. */
const OPEN_RETRY_MS = 20;

function connect(filename: string, busyTimeoutMs: number): Database.Database {
  if (filename !== IN_MEMORY) mkdirSync(dirname(filename), { recursive: true });
  const client = new Database(filename, { timeout: busyTimeoutMs });
  try {
    // WAL lets readers run beside the single writer; an in-memory database has no journal file to put in WAL mode.
    if (filename !== IN_MEMORY) client.pragma('journal_mode = WAL');
    client.pragma('synchronous = NORMAL');
    client.pragma(`busy_timeout = ${busyTimeoutMs}`);
    client.pragma('foreign_keys = ON');
    // Checkpoint every ~40 MB of WAL instead of 4 MB: each checkpoint syncs the database file, and
    // write-heavy runners otherwise pay it every few hundred transactions (bench/runner.ts: +10-40%).
    client.pragma('wal_autocheckpoint = 10000');
    return client;
  } catch (error) {
    client.close();
    throw error;
  }
}

/**
 * {@link connect}, retried while the file is busy: switching a fresh file to WAL can report
 * SQLITE_BUSY without waiting on the busy handler while another process does the same.
 */
async function connectWhenFree(filename: string, busyTimeoutMs: number): Promise<Database.Database> {
  const deadline = performance.now() + busyTimeoutMs;
  for (;;) {
    try {
      return connect(filename, busyTimeoutMs);
    } catch (error) {
      const busy = String((error as { code?: unknown }).code).startsWith('SQLITE_BUSY');
      if (!busy || performance.now() >= deadline) throw error;
      await sleep(OPEN_RETRY_MS);
    }
  }
}

/**
 * Opens (creating if needed) a SQLite database as Orrery storage: sets WAL, synchronous=NORMAL,
 * busy_timeout and foreign keys, applies pending migrations and prepares every statement.
 * Several processes may open the same file; write transactions are `BEGIN IMMEDIATE`.
 * @throws ConfigurationError for an invalid busy timeout, a file that cannot be opened, or (with
 *   `migrate: false`) a schema older than the code.
 * @throws DatabaseError when a migration fails.
 */
export async function openSqliteStorage(options: SqliteStorageOptions): Promise<Storage> {
  const { filename } = options;
  const migrate = options.migrate ?? SQLITE_DEFAULTS.migrate;
  const busyTimeoutMs = options.busyTimeoutMs ?? SQLITE_DEFAULTS.busyTimeoutMs;
  if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw new ConfigurationError(`busyTimeoutMs must be a non-negative integer of milliseconds, got ${busyTimeoutMs}.`);
  }
  let client: Database.Database;
  try {
    client = await connectWhenFree(filename, busyTimeoutMs);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ConfigurationError(
      `Cannot open SQLite database "${filename}": ${message}. Check that the path is a writable file location.`,
      { cause: error },
    );
  }
  try {
    if (migrate) applyMigrations(client);
    else assertSchemaCurrent(client, filename);
    const handle = createHandle(client, drizzle({ client, schema }), schema.tables);
    return {
      dialect: 'sqlite',
      executions: new SqliteExecutionStore(handle),
      cron: new SqliteCronStore(handle),
      runners: new SqliteRunnerStore(handle),
      workflows: new SqliteWorkflowStore(handle),
      close: async () => {
        if (client.open) client.close();
      },
    };
  } catch (error) {
    client.close();
    throw toOrreryError('openSqliteStorage', error);
  }
}
