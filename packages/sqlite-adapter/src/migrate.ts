import { fileURLToPath } from 'node:url';
import { ConfigurationError } from '@orreryjs/core';
import type BetterSqlite3 from 'better-sqlite3';
import { type MigrationMeta, readMigrationFiles } from 'drizzle-orm/migrator';

/** The drizzle-kit output shipped with the package: ../drizzle from both src/ and dist/. */
const MIGRATIONS_FOLDER = fileURLToPath(new URL('../drizzle', import.meta.url));

/** drizzle's bookkeeping table, kept in its format so that drizzle-kit and drizzle's migrator agree with us. */
const MIGRATIONS_TABLE = '__drizzle_migrations';

/** The migrations this version of the code needs, oldest first. */
function codeMigrations(): MigrationMeta[] {
  return readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
}

/** `created_at` (the journal's `when`) of the newest migration applied to the file; 0 when none. */
function lastAppliedMillis(client: BetterSqlite3.Database): number {
  const table = client
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
    .get(MIGRATIONS_TABLE) as unknown;
  if (table === undefined) return 0;
  const row = client.prepare(`SELECT max(created_at) AS last FROM "${MIGRATIONS_TABLE}"`).get() as {
    last: number | null;
  };
  return Number(row.last ?? 0);
}

/**
 * Applies the pending migrations of ./drizzle in one `BEGIN IMMEDIATE` transaction.
 * drizzle's own better-sqlite3 migrator reads the applied list before taking the write
 * lock, so two processes opening a fresh file together would both try to create the
 * tables; deciding under the lock makes the second one find nothing to do.
 */
export function applyMigrations(client: BetterSqlite3.Database): void {
  const migrations = codeMigrations();
  client
    .transaction(() => {
      client.exec(
        `CREATE TABLE IF NOT EXISTS "${MIGRATIONS_TABLE}" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`,
      );
      const last = lastAppliedMillis(client);
      const record = client.prepare(`INSERT INTO "${MIGRATIONS_TABLE}" (hash, created_at) VALUES (?, ?)`);
      for (const migration of migrations) {
        if (migration.folderMillis <= last) continue;
        for (const statement of migration.sql) {
          if (statement.trim() !== '') client.exec(statement);
        }
        record.run(migration.hash, migration.folderMillis);
      }
    })
    .immediate();
}

/**
 * Refuses a file whose schema is older than the code, for `migrate: false`.
 * @throws ConfigurationError naming the file and how many migrations are missing.
 */
export function assertSchemaCurrent(client: BetterSqlite3.Database, filename: string): void {
  const last = lastAppliedMillis(client);
  const pending = codeMigrations().filter((migration) => migration.folderMillis > last);
  if (pending.length > 0) {
    throw new ConfigurationError(
      `SQLite database "${filename}" is missing ${pending.length} schema migration(s) this version of Orrery needs. Open it once with migrate: true (the default) to apply them, then retry.`,
    );
  }
}
