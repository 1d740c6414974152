import { ConfigurationError } from './errors.js';

/** Connection-pool settings of a PostgreSQL storage (SQLite ignores them). */
export interface PoolOptions {
  /**
   * Most connections the storage holds open at once.
   * @default 10
   */
  max?: number;
  /**
   * How long opening a connection (or waiting for a free one) may take before it fails with a
   * `DatabaseError`; a server that accepts TCP but never answers fails `create()` after this long.
   * @default 10_000
   */
  connectionTimeoutMs?: number;
  /**
   * An idle pooled connection is closed after this long.
   * @default 30_000
   */
  idleTimeoutMs?: number;
  /**
   * Server-side limit on one statement (Postgres `statement_timeout`); none when unset.
   * @default undefined (no limit)
   */
  statementTimeoutMs?: number;
}

/** {@link PoolOptions} with every field checked and its default filled in. */
export interface ResolvedPoolOptions {
  max: number;
  connectionTimeoutMs: number;
  idleTimeoutMs: number;
  statementTimeoutMs: number | undefined;
}

/** Defaults of {@link PoolOptions}, field by field. */
export const POOL_DEFAULTS: Readonly<ResolvedPoolOptions> = Object.freeze({
  max: 10,
  connectionTimeoutMs: 10_000,
  idleTimeoutMs: 30_000,
  statementTimeoutMs: undefined,
});

/** Longest duration a timer can wait (2³¹ − 1 ms, about 24.8 days); longer ones would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const POOL_FIELDS = ['max', 'connectionTimeoutMs', 'idleTimeoutMs', 'statementTimeoutMs'] as const;

function checkPositiveInteger(name: string, value: unknown, max: number, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new ConfigurationError(
      `${name} must be an integer from 1 to ${max} (${what}), got ${JSON.stringify(value)}.`,
    );
  }
  return value;
}

/**
 * Checks pool settings and fills in the defaults; `name` is the option's name in messages.
 * @throws ConfigurationError naming the first invalid or unknown field and what it accepts.
 */
export function resolvePoolOptions(value: unknown, name = 'pool'): ResolvedPoolOptions {
  if (value === undefined) return { ...POOL_DEFAULTS };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError(
      `${name} must be an object like { max, connectionTimeoutMs, idleTimeoutMs, statementTimeoutMs }, got ${JSON.stringify(value)}.`,
    );
  }
  const unknown = Object.keys(value).find((key) => !(POOL_FIELDS as readonly string[]).includes(key));
  if (unknown !== undefined) {
    throw new ConfigurationError(`${name}.${unknown} is not an option; use ${POOL_FIELDS.join(', ')}.`);
  }
  const options = value as PoolOptions;
  const ms = 'milliseconds';
  return {
    max: checkPositiveInteger(`${name}.max`, options.max ?? POOL_DEFAULTS.max, 10_000, 'connections'),
    connectionTimeoutMs: checkPositiveInteger(
      `${name}.connectionTimeoutMs`,
      options.connectionTimeoutMs ?? POOL_DEFAULTS.connectionTimeoutMs,
      MAX_TIMER_MS,
      ms,
    ),
    idleTimeoutMs: checkPositiveInteger(
      `${name}.idleTimeoutMs`,
      options.idleTimeoutMs ?? POOL_DEFAULTS.idleTimeoutMs,
      MAX_TIMER_MS,
      ms,
    ),
    statementTimeoutMs:
      options.statementTimeoutMs === undefined
        ? POOL_DEFAULTS.statementTimeoutMs
        : checkPositiveInteger(`${name}.statementTimeoutMs`, options.statementTimeoutMs, MAX_TIMER_MS, ms),
  };
}

/** Longest `application_name` Postgres keeps (NAMEDATALEN − 1 bytes); longer names are cut by the server. */
const MAX_APPLICATION_NAME = 63;
const APPLICATION_NAME = /^[\x20-\x7e]+$/;

/**
 * Checks a connection's `application_name` (shown in `pg_stat_activity`): 1-63 printable
 * ASCII characters, which the server keeps as they are.
 * @throws ConfigurationError naming the value and the rule.
 */
export function validateApplicationName(value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_APPLICATION_NAME || !APPLICATION_NAME.test(value)) {
    throw new ConfigurationError(
      `applicationName must be 1-${MAX_APPLICATION_NAME} printable ASCII characters (Postgres shows it in pg_stat_activity), got ${JSON.stringify(value)}.`,
    );
  }
  return value;
}

/**
 * The default `application_name` of a runner's connections, `orrery:<runnerId>`, cut to what
 * Postgres keeps and with characters it would mangle replaced by `?`.
 */
export function defaultApplicationName(runnerId: string): string {
  return `orrery:${runnerId}`.replace(/[^\x20-\x7e]/g, '?').slice(0, MAX_APPLICATION_NAME);
}

/**
 * Where a PostgreSQL storage listens for cross-process wake-ups (LISTEN/NOTIFY): `true` on its
 * own URL, `{ database }` on a direct URL (when the main one goes through a transaction pooler,
 * which cannot hold a LISTEN), `false` not at all (polling only).
 */
export type ListenOption = boolean | { database: string };

/**
 * Checks a `listen` option; `name` is the option's name in messages.
 * @throws ConfigurationError when it is neither a boolean nor `{ database: 'postgres://…' }`.
 */
export function resolveListenOption(value: unknown, name = 'listen'): ListenOption {
  if (value === undefined) return true;
  if (typeof value === 'boolean') return value;
  const what = `${name} must be true, false or { database: 'postgres://user@host:5432/db' } (a direct URL for LISTEN when the main one goes through a transaction pooler)`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError(`${what}, got ${JSON.stringify(value)}.`);
  }
  const unknown = Object.keys(value).find((key) => key !== 'database');
  if (unknown !== undefined) throw new ConfigurationError(`${name}.${unknown} is not an option; ${what}.`);
  const { database } = value as { database?: unknown };
  if (typeof database !== 'string' || !/^postgres(ql)?:\/\//.test(database) || !URL.canParse(database)) {
    throw new ConfigurationError(
      `${name}.database must be a postgres:// or postgresql:// URL, got ${JSON.stringify(typeof database === 'string' ? database.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@') : database)}; ${what}.`,
    );
  }
  return { database };
}
