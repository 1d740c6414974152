import { fileURLToPath } from 'node:url';
import { ConfigurationError } from '@orreryjs/core';
import { type MigrationMeta, readMigrationFiles } from 'drizzle-orm/migrator';
import type pg from 'pg';

/** The drizzle-kit output shipped with the package: ../drizzle from both src/ and dist/. */
const MIGRATIONS_FOLDER = fileURLToPath(new URL('../drizzle', import.meta.url));

/**
 * The applied-migrations table, in the tenant's schema and in drizzle's format (drizzle's migrator
 * reads it with `migrationsSchema`/`migrationsTable` set). Not drizzle's default name: a database
 * is often shared, and an application's own drizzle bookkeeping in the same schema must not be
 * mistaken for Orrery's.
 */
const MIGRATIONS_TABLE = '__orrery_migrations';

/**
 * drizzle-kit qualifies the target of a foreign key with "public" even for tables declared
 * without a schema; the tables themselves are unqualified. Dropping the qualifier makes every
 * statement resolve through the migration transaction's search_path (SET LOCAL to the tenant's
 * schema), so one migration set serves every tenant schema.
 */
const PUBLIC_QUALIFIER = /"public"\./g;

/** The migrations this version of the code needs, oldest first. */
function codeMigrations(): MigrationMeta[] {
  return readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
}

/** `"schema"."__orrery_migrations"`; the schema name was validated before it reached here. */
function migrationsTable(schema: string): string {
  return `"${schema}"."${MIGRATIONS_TABLE}"`;
}

/** `created_at` (the journal's `when`) of the newest migration applied to the schema; 0 when none. */
async function lastAppliedMillis(client: pg.ClientBase, schema: string): Promise<number> {
  const table = migrationsTable(schema);
  const exists = await client.query<{ found: string | null }>('SELECT to_regclass($1)::text AS found', [table]);
  if (exists.rows[0]?.found == null) return 0;
  const last = await client.query<{ last: string | null }>(`SELECT max(created_at)::text AS last FROM ${table}`);
  return Number(last.rows[0]?.last ?? 0);
}

/**
 * Applies the pending migrations of ./drizzle to `schema` in one transaction, holding a
 * transaction-scoped advisory lock keyed on the schema name, so that instances opening one
 * schema together take turns: the second finds the work done (DDL is transactional, so it never
 * sees half of it). Creates the schema when missing. The migration SQL is unqualified: it runs with
 * `SET LOCAL search_path` on `schema`, which ends with the transaction, so no session setting
 * outlives it (a transaction pooler may hand the connection to anyone next).
 */
export async function applyMigrations(client: pg.ClientBase, schema: string): Promise<void> {
  const migrations = codeMigrations();
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`orrery:migrate:${schema}`]);
    // Checked before creating, so that a role without CREATE on the database can use a schema made for it.
    const found = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (found.rowCount === 0) await client.query(`CREATE SCHEMA "${schema}"`);
    await client.query(`SET LOCAL search_path TO "${schema}"`);
    const last = await lastAppliedMillis(client, schema);
    const pending = migrations.filter((migration) => migration.folderMillis > last);
    if (pending.length > 0) {
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${migrationsTable(schema)} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`,
      );
    }
    for (const migration of pending) {
      for (const statement of migration.sql) {
        if (statement.trim() !== '') await client.query(statement.replace(PUBLIC_QUALIFIER, ''));
      }
      await client.query(`INSERT INTO ${migrationsTable(schema)} (hash, created_at) VALUES ($1, $2)`, [
        migration.hash,
        migration.folderMillis,
      ]);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/**
 * Refuses a schema older than the code, for `migrate: false`.
 * @throws ConfigurationError naming the schema and how many migrations are missing.
 */
export async function assertSchemaCurrent(client: pg.ClientBase, schema: string): Promise<void> {
  const last = await lastAppliedMillis(client, schema);
  const pending = codeMigrations().filter((migration) => migration.folderMillis > last);
  if (pending.length > 0) {
    throw new ConfigurationError(
      `PostgreSQL schema "${schema}" is missing ${pending.length} schema migration(s) this version of Orrery needs. Open it once with migrate: true (the default) to apply them, then retry.`,
    );
  }
}
