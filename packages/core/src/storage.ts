import type { CronStore } from './cron-store.js';
import { ConfigurationError } from './errors.js';
import type { ExecutionStore } from './execution-store.js';
import type { PipelineStatus } from './executor.js';
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
  /**
   * Notifications that other processes committed work (PostgreSQL LISTEN/NOTIFY); absent when
   * the adapter has none (SQLite) or `listen` is false, and then polling alone finds that work.
   * A hint only: correctness never depends on one arriving.
   */
  readonly wakeUps?: WakeUps;
  /** Closes connections; idempotent. */
  close(): Promise<void>;
}

/**
 * What a notification says became true, for whom to wake:
 * - `all`: anything may have changed (the listen connection was (re)established, so a
 *   notification may have been missed while it was down);
 * - `tasks`: tasks became ready to run at `availableAt`, the writer's now (the claim loop; a
 *   listener whose clock is a little behind the writer's claims them when its clock gets there);
 * - `pipeline`: pipeline `id` became terminal or paused, or was resumed (its waiters; the claim loop on resume);
 * - `schedule`: a schedule was added, enabled or made due sooner, next due at `nextRunAt` (the cron tick).
 */
export type WakeUp =
  | { kind: 'all' }
  /** Tasks became ready; `workflowName` when all of them are of that workflow (a listener that runs none of its tasks need not claim). */
  | { kind: 'tasks'; availableAt: Date; workflowName?: string }
  | { kind: 'pipeline'; id: string; status: PipelineStatus }
  | { kind: 'schedule'; nextRunAt: Date };

/** Cross-process wake-ups of a {@link Storage}: one listen connection, shared by every subscriber. */
export interface WakeUps {
  /** Calls `listener` for each wake-up until the returned function is called. The listener must not throw. */
  subscribe(listener: (wakeUp: WakeUp) => void): () => void;
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

const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

/** Prefix of a schema's wake-up channel (LISTEN/NOTIFY), `orrery.<schema>`. */
export const WAKE_UP_CHANNEL_PREFIX = 'orrery.';

/**
 * Longest schema name: its wake-up channel `orrery.<schema>` must fit a PostgreSQL identifier
 * (63 bytes; a longer channel name is refused by LISTEN), so 63 − 7 = 56.
 */
export const MAX_SCHEMA_NAME_LENGTH = 63 - WAKE_UP_CHANNEL_PREFIX.length;

/**
 * System schemas Orrery must never create tables in: `information_schema` and, by prefix, every
 * `pg_` schema (`pg_catalog`, `pg_toast`, `pg_temp_N`, …), which Postgres reserves.
 */
const SYSTEM_SCHEMAS: ReadonlySet<string> = new Set(['information_schema']);

/**
 * Checks a Postgres schema name before it reaches SQL: lower-case letters, digits and `_`,
 * not starting with a digit, at most 56 characters (its wake-up channel `orrery.<schema>` must
 * fit PostgreSQL's 63-byte identifiers), not a system schema (`information_schema`,
 * any `pg_`-prefixed name).
 * @throws ConfigurationError naming the schema and the rule.
 */
export function validateSchemaName(schema: string): string {
  if (typeof schema === 'string' && (SYSTEM_SCHEMAS.has(schema) || schema.startsWith('pg_'))) {
    throw new ConfigurationError(
      `Schema name ${JSON.stringify(schema)} is invalid: it is a PostgreSQL system schema (information_schema and every "pg_" name are reserved); give Orrery a schema of its own, e.g. "orrery" or "orrery_tenant_a".`,
    );
  }
  if (typeof schema === 'string' && SCHEMA_NAME.test(schema) && schema.length > MAX_SCHEMA_NAME_LENGTH) {
    throw new ConfigurationError(
      `Schema name ${JSON.stringify(schema)} is invalid: it is ${schema.length} characters, over the limit of ${MAX_SCHEMA_NAME_LENGTH}: its wake-up channel "${WAKE_UP_CHANNEL_PREFIX}<schema>" must fit PostgreSQL's 63-byte identifiers. Use a shorter schema name.`,
    );
  }
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
    throw new ConfigurationError(
      `Schema name ${JSON.stringify(schema)} is invalid: use 1-${MAX_SCHEMA_NAME_LENGTH} lower-case letters, digits or "_", starting with a letter or "_" and not with "pg_" (e.g. "orrery_tenant_a").`,
    );
  }
  return schema;
}
