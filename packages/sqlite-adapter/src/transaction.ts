import { DatabaseError, isOrreryError } from '@orreryjs/core';
import type BetterSqlite3 from 'better-sqlite3';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type * as schema from './schema.js';
import type { SqliteTables } from './schema.js';

/** The drizzle database every store of one open file shares. */
export type SqliteDb = BetterSQLite3Database<typeof schema>;

/** An open file: the better-sqlite3 connection (for transactions) and drizzle over it (for queries). */
export interface SqliteHandle {
  readonly client: BetterSqlite3.Database;
  readonly db: SqliteDb;
  /** Orrery's tables. */
  readonly tables: SqliteTables;
  /** `client.transaction` over "run the given function", built once: building a wrapper per call costs more than a small unit of work. */
  readonly transaction: BetterSqlite3.Transaction<(work: () => unknown) => unknown>;
}

/** Wraps an open connection and its drizzle database as a handle. */
export function createHandle(client: BetterSqlite3.Database, db: SqliteDb, tables: SqliteTables): SqliteHandle {
  return { client, db, tables, transaction: client.transaction((work: () => unknown) => work()) };
}

/**
 * Runs one port method's unit of work synchronously inside `BEGIN IMMEDIATE`, so that the
 * write lock is taken up front (waiting up to busy_timeout for other processes) and the
 * work never has to upgrade a read lock, which SQLite cannot do without failing.
 * @throws DatabaseError wrapping a driver error as "<method> failed: <message>"; Orrery errors pass through.
 */
export function writeTransaction<T>(handle: SqliteHandle, method: string, work: () => T): Promise<T> {
  try {
    return Promise.resolve(handle.transaction.immediate(work) as T);
  } catch (error) {
    return Promise.reject(toOrreryError(method, error));
  }
}

/**
 * Runs a read-only unit of work in a deferred transaction, so its statements see one snapshot.
 * @throws DatabaseError wrapping a driver error; Orrery errors pass through.
 */
export function readTransaction<T>(handle: SqliteHandle, method: string, work: () => T): Promise<T> {
  try {
    return Promise.resolve(handle.transaction.deferred(work) as T);
  } catch (error) {
    return Promise.reject(toOrreryError(method, error));
  }
}

/** Wraps anything but an Orrery error as a DatabaseError, keeping it as `cause`. */
export function toOrreryError(method: string, error: unknown): Error {
  if (isOrreryError(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new DatabaseError(`${method} failed: ${message}`, { cause: error });
}
