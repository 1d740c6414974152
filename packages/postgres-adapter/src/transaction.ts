import { DatabaseError, isOrreryError } from '@orreryjs/core';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import type { PostgresTables } from './schema.js';

/**
 * A drizzle database over the pool (single statements) or over one pooled client (a
 * transaction); `$client` runs the raw statements that are rendered once and sent by name.
 */
export type PostgresDb = NodePgDatabase & { $client: pg.Pool | pg.PoolClient };

/** An open storage: the pool and drizzle over it, shared by every store. */
export interface PostgresHandle {
  readonly pool: pg.Pool;
  /** Runs each statement on any pooled connection, in autocommit: one statement, one transaction. */
  readonly db: PostgresDb;
  /** Orrery's tables, qualified with the storage's schema. */
  readonly tables: PostgresTables;
  /**
   * The name a prepared statement is sent under: `name` itself, so that each connection parses
   * it once, or none (an unnamed statement) when named statements are turned off.
   */
  named(name: string): string;
}

/** Wraps an open pool and drizzle over it as a handle. */
export function createHandle(pool: pg.Pool, tables: PostgresTables, preparedStatements = true): PostgresHandle {
  return {
    pool,
    db: drizzle({ client: pool }),
    tables,
    // drizzle passes the name to pg, which sends an unnamed statement when it is undefined.
    named: (name) => (preparedStatements ? name : (undefined as unknown as string)),
  };
}

// One drizzle instance per pooled connection, built on its first transaction: connections are long-lived and reused.
const clientDatabases = new WeakMap<pg.PoolClient, PostgresDb>();

function databaseOf(client: pg.PoolClient): PostgresDb {
  let db = clientDatabases.get(client);
  if (db === undefined) {
    db = drizzle({ client });
    clientDatabases.set(client, db);
  }
  return db;
}

/**
 * Runs `use` on a connection checked out of `pool` for it alone, and gives the connection back.
 * A connection the server drops while it is checked out (`pg_terminate_backend`, a failover, a
 * restart) emits `'error'` on its client, which would crash the process with no listener: the
 * listener here holds it for the whole checkout, the statement in flight (or the next one) fails
 * with the driver's error, and the connection is discarded (`release(error)`) rather than
 * handed to the next caller. `use` may mark the connection broken itself with `discard`.
 * @throws whatever `pool.connect()` or `use` throws, unwrapped.
 */
export async function withClient<T>(
  pool: pg.Pool,
  use: (client: pg.PoolClient, discard: (error: Error) => void) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const discard = (error: Error) => {
    broken ??= error;
  };
  client.on('error', discard);
  try {
    return await use(client, discard);
  } finally {
    // Released first: the pool attaches its own idle listener before this one goes.
    client.release(broken);
    client.removeListener('error', discard);
  }
}

/**
 * Runs a unit of work of several statements in one `BEGIN … COMMIT` on one pooled connection;
 * any failure rolls it back. Most port methods need no such block: they are written as a
 * single statement (data-modifying CTEs), which Postgres runs as its own transaction. A
 * connection lost midway fails the unit of work with a `DatabaseError`, never the process.
 * `localSettings` (`SET LOCAL …` statements, constant text) go with the BEGIN, in the same
 * round trip: a simple query may hold several statements when it has no parameters.
 * @throws DatabaseError wrapping a driver error as "<method> failed: <message>"; Orrery errors pass through.
 */
export async function transaction<T>(
  handle: PostgresHandle,
  method: string,
  work: (tx: PostgresDb) => Promise<T>,
  localSettings?: string,
): Promise<T> {
  try {
    return await withClient(handle.pool, async (client, discard) => {
      await client.query(localSettings === undefined ? 'BEGIN' : `BEGIN; ${localSettings}`);
      try {
        const result = await work(databaseOf(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: unknown) => {
          // A connection that cannot even roll back is discarded rather than handed to the next caller.
          discard(rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError)));
        });
        throw error;
      }
    });
  } catch (error) {
    throw toOrreryError(method, error);
  }
}

/**
 * Runs a unit of work that is one statement (so one transaction of its own) on the pool, or a
 * write followed by a read that only reports what is there (e.g. the row holding a taken key).
 * @throws DatabaseError wrapping a driver error as "<method> failed: <message>"; Orrery errors pass through.
 */
export async function statement<T>(method: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw toOrreryError(method, error);
  }
}

/**
 * Wraps anything but an Orrery error as a DatabaseError whose `cause` is the driver's error
 * (drizzle's "Failed query" wrapper, which repeats the SQL and every parameter, is dropped).
 */
export function toOrreryError(method: string, error: unknown): Error {
  const driverError = unwrap(error);
  // A codec's ValidationError (an id or instant no column holds) stays what it is, even inside drizzle's wrapper.
  if (isOrreryError(driverError)) return driverError;
  const message = driverError instanceof Error ? driverError.message : String(driverError);
  return new DatabaseError(`${method} failed: ${message}`, { cause: driverError });
}

function unwrap(error: unknown): unknown {
  return error instanceof DrizzleQueryError && error.cause !== undefined ? error.cause : error;
}

/** The SQLSTATE of a Postgres error, if `error` is one. */
export function sqlState(error: unknown): string | undefined {
  const driverError = unwrap(error);
  return driverError instanceof pg.DatabaseError ? driverError.code : undefined;
}
