import type { CronStore } from './cron-store.js';
import { ConfigurationError } from './errors.js';
import type { ExecutionStore } from './execution-store.js';
import type { RunnerStore } from './runner-store.js';
import type { WorkflowStore } from './workflow-store.js';

/** An open database: the ports a runner and its cron scheduler use. */
export interface Storage {
  /** Which adapter; for logs and diagnostics only, never for branching outside adapters. */
  readonly dialect: string;
  readonly executions: ExecutionStore;
  readonly cron: CronStore;
  readonly runners: RunnerStore;
  /** The `workflows` table: registered definitions, for processes without the task code. */
  readonly workflows: WorkflowStore;
  /** Closes connections; idempotent. */
  close(): Promise<void>;
}

/** Options every adapter's `open…Storage` accepts. */
export interface OpenStorageOptions {
  /** Apply pending migrations on open. @default true */
  migrate?: boolean;
}

/** A database URL, parsed into the adapter that serves it. */
export type DatabaseLocation = { kind: 'sqlite'; filename: string } | { kind: 'postgres'; connectionString: string };

const ACCEPTED =
  "'sqlite:./path/to/file.db', 'sqlite::memory:', or 'postgres://user@host:5432/db' (also 'postgresql://')";

/**
 * Parses a database URL.
 * @throws ConfigurationError for an empty URL or an unknown scheme, listing the accepted forms.
 */
export function parseDatabaseUrl(url: string): DatabaseLocation {
  if (typeof url !== 'string' || url.trim() === '') {
    throw new ConfigurationError(`Database URL is empty; use ${ACCEPTED}.`);
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    return { kind: 'postgres', connectionString: url };
  }
  if (url.startsWith('sqlite:')) {
    const filename = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (filename === '') throw new ConfigurationError(`Database URL "${url}" names no file; use ${ACCEPTED}.`);
    return { kind: 'sqlite', filename };
  }
  throw new ConfigurationError(`Database URL "${url}" has an unknown scheme; use ${ACCEPTED}.`);
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * System schemas Orrery must never create tables in: `information_schema` and, by prefix, every
 * `pg_` schema (`pg_catalog`, `pg_toast`, `pg_temp_N`, …), which Postgres reserves.
 */
const SYSTEM_SCHEMAS: ReadonlySet<string> = new Set(['information_schema']);

/**
 * Checks a Postgres schema name before it reaches SQL: lower-case letters, digits and `_`,
 * not starting with a digit, at most 63 characters, not a system schema (`information_schema`,
 * any `pg_`-prefixed name).
 * @throws ConfigurationError naming the schema and the rule.
 */
export function validateSchemaName(schema: string): string {
  if (typeof schema === 'string' && (SYSTEM_SCHEMAS.has(schema) || schema.startsWith('pg_'))) {
    throw new ConfigurationError(
      `Schema name ${JSON.stringify(schema)} is invalid: it is a PostgreSQL system schema (information_schema and every "pg_" name are reserved); give Orrery a schema of its own, e.g. "orrery" or "orrery_tenant_a".`,
    );
  }
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
    throw new ConfigurationError(
      `Schema name ${JSON.stringify(schema)} is invalid: use 1-63 lower-case letters, digits or "_", starting with a letter or "_" and not with "pg_" (e.g. "orrery_tenant_a").`,
    );
  }
  return schema;
}
