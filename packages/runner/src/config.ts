import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  type Clock,
  ConfigurationError,
  type DatabaseLocation,
  defaultApplicationName,
  type ListenOption,
  type Logger,
  POOL_DEFAULTS,
  type PoolOptions,
  parseDatabaseUrl,
  type ResolvedPoolOptions,
  resolveListenOption,
  resolvePoolOptions,
  silentLogger,
  systemClock,
  validateApplicationName,
  validateSchemaName,
  type Workflow,
} from '@orreryjs/core';
import { CRON_DEFAULTS } from '@orreryjs/cron';

/** How long terminal rows are kept before the hourly retention sweep deletes them. */
export interface RetentionConfig {
  /**
   * Age (since completion) after which completed, failed and cancelled pipelines and their tasks are deleted
   * (not while their cron ledger row is still `claimed`), and after which silent runners' rows are deleted.
   * Must exceed cronMaxRecoveryAgeMs + cronLostThresholdMs. `Infinity` keeps them forever.
   * @default 2_592_000_000 (30 days)
   */
  executionsMs?: number;
  /**
   * Age (since the row became terminal: handed off, else claimed) after which cron ledger rows that are no
   * longer `claimed` are deleted, except handed-off rows whose pipeline is unfinished. Must exceed
   * cronMaxRecoveryAgeMs + cronLostThresholdMs. `Infinity` keeps them forever.
   * @default 7_776_000_000 (90 days)
   */
  cronLedgerMs?: number;
}

/** Settings of {@link DefaultRunner.create}; every field is optional. */
export interface DefaultRunnerConfig {
  /**
   * Where state lives: `'sqlite:./orrery.db'`, `'sqlite::memory:'` or `'postgres://user@host:5432/db'`.
   * @default 'sqlite:./orrery.db'
   */
  database?: string;
  /**
   * PostgreSQL schema holding the tables, one per tenant (ignored for SQLite).
   * @default 'public'
   */
  schema?: string;
  /**
   * PostgreSQL connection pool (ignored for SQLite): size, connect and idle timeouts, statement timeout.
   * A server that accepts TCP but never answers fails `create()` after `connectionTimeoutMs`
   * with a `DatabaseError` naming host, port and timeout.
   * @default { max: 10, connectionTimeoutMs: 10_000, idleTimeoutMs: 30_000 } (no statement timeout)
   */
  pool?: PoolOptions;
  /**
   * PostgreSQL `application_name` of this runner's connections, shown in `pg_stat_activity`
   * (ignored for SQLite): 1-63 printable ASCII characters.
   * @default `orrery:${runnerId}` (cut to 63 characters)
   */
  applicationName?: string;
  /**
   * Wake up at once when another process commits work (PostgreSQL LISTEN/NOTIFY on one extra
   * connection, named `<applicationName>:listen`; ignored for SQLite, which polls across
   * processes): the claim loop for ready tasks, the cron tick for added or enabled schedules,
   * `execute()`/`wait()` for finished pipelines. `{ database }` listens on a direct URL when
   * `database` goes through a transaction pooler (which cannot hold a LISTEN); `false` polls only.
   * Polling stays the fallback either way.
   * @default true
   */
  listen?: ListenOption;
  /** Workflows to register at creation; more can be added with `register()`. @default [] */
  workflows?: Workflow[];
  /** This runner's name in the `runners` table and in task leases. @default `${hostname}-${pid}-${random}` */
  runnerId?: string;
  /** Most tasks this process runs at once. @default 16 */
  maxConcurrentTasks?: number;
  /**
   * Time limit of one task attempt unless the task sets `timeoutMs`: a positive integer of
   * milliseconds of any length (a 30-day limit waits 30 days), or `Infinity` for no limit.
   * @default 300_000
   */
  taskTimeoutMs?: number;
  /** How long `execute()` and `wait()` wait for a pipeline unless told otherwise. @default 3_600_000 */
  pipelineTimeoutMs?: number;
  /**
   * How long a claimed task is held; renewed every third of it while the task runs, so only a
   * dead or stalled runner loses it.
   * @default 30_000
   */
  taskLeaseMs?: number;
  /**
   * Fallback poll for ready tasks and, in `execute()`/`wait()`, for pipelines finished elsewhere;
   * local events (and, on PostgreSQL with `listen`, other processes' commits) wake them at once.
   * @default 250
   */
  pollIntervalMs?: number;
  /** Run the cron tick loop in this process. @default true */
  enableCronScheduling?: boolean;
  /**
   * Pause between cron ticks. A tick also wakes at the next slot it knows of: those it advanced,
   * and (read by each tick's probe) the earliest due before the next tick, whichever process
   * wrote the schedule. @default 1_000
   */
  cronPollIntervalMs?: number;
  /**
   * Lost occurrences one recovery pass takes, and buffered occurrences one tick releases. A
   * tick's claim takes every due schedule up to `cronMaxOccurrencesPerTick`; when more are due,
   * the next ticks follow at once.
   * @default 100
   */
  cronBatchSize?: number;
  /** Occurrences of one schedule run per tick under `run_all`; a larger backlog drains over ticks. @default 100 */
  cronMaxCatchupExecutions?: number;
  /** Occurrences inserted in one claim transaction, all schedules together. @default 500 */
  cronMaxOccurrencesPerTick?: number;
  /** An occurrence claimed this late is still on time. @default 60_000 */
  cronMisfireThresholdMs?: number;
  /** `run_all` drops missed occurrences older than this. @default 86_400_000 */
  cronMaxCatchupAgeMs?: number;
  /** Run the cron recovery loop in this process. @default true */
  cronEnableRecovery?: boolean;
  /** Pause between recovery passes. @default 30_000 */
  cronRecoveryIntervalMs?: number;
  /** An occurrence still `claimed` this long after its fire time and its claim is lost and recovered. @default 60_000 */
  cronLostThresholdMs?: number;
  /** A lost occurrence due (the later of claim and fire time) longer ago than this is abandoned, unless its pipeline exists. @default 86_400_000 */
  cronMaxRecoveryAgeMs?: number;
  /** Recovery attempts before a lost occurrence is abandoned. @default 3 */
  cronMaxRecoveryAttempts?: number;
  /** Ages of terminal rows the hourly sweep deletes. @default { executionsMs: 30 days, cronLedgerMs: 90 days } */
  retention?: RetentionConfig;
  /** Cap on a serialised context (input, schedule context, task writes), in bytes. @default 1_048_576 */
  maxContextBytes?: number;
  /**
   * Apply pending migrations when opening the database; when false, a schema older than the
   * code is a ConfigurationError.
   * @default true
   */
  migrate?: boolean;
  /**
   * PostgreSQL: send named prepared statements (each connection parses a statement once). Set
   * false behind PgBouncer in `pool_mode = transaction`, which cannot route them: every
   * statement is then sent unnamed. Ignored for SQLite.
   * @default true
   */
  preparedStatements?: boolean;
  /** The source of "now"; inject a ManualClock in tests. @default the system clock */
  clock?: Clock;
  /** pino-compatible logger. @default silent */
  logger?: Logger;
}

/**
 * The defaults of {@link DefaultRunnerConfig}, field by field. The `cron…` fields (and
 * `maxContextBytes`) are `@orreryjs/cron`'s {@link CRON_DEFAULTS}, so each is stated once.
 */
export const RUNNER_DEFAULTS = Object.freeze({
  database: 'sqlite:./orrery.db',
  schema: 'public',
  pool: POOL_DEFAULTS,
  listen: true,
  maxConcurrentTasks: 16,
  taskTimeoutMs: 300_000,
  pipelineTimeoutMs: 3_600_000,
  taskLeaseMs: 30_000,
  pollIntervalMs: 250,
  enableCronScheduling: CRON_DEFAULTS.enableScheduling,
  cronPollIntervalMs: CRON_DEFAULTS.pollIntervalMs,
  cronBatchSize: CRON_DEFAULTS.batchSize,
  cronMaxCatchupExecutions: CRON_DEFAULTS.maxCatchupExecutions,
  cronMaxOccurrencesPerTick: CRON_DEFAULTS.maxOccurrencesPerTick,
  cronMisfireThresholdMs: CRON_DEFAULTS.misfireThresholdMs,
  cronMaxCatchupAgeMs: CRON_DEFAULTS.maxCatchupAgeMs,
  cronEnableRecovery: CRON_DEFAULTS.enableRecovery,
  cronRecoveryIntervalMs: CRON_DEFAULTS.recoveryIntervalMs,
  cronLostThresholdMs: CRON_DEFAULTS.lostThresholdMs,
  cronMaxRecoveryAgeMs: CRON_DEFAULTS.maxRecoveryAgeMs,
  cronMaxRecoveryAttempts: CRON_DEFAULTS.maxRecoveryAttempts,
  retention: Object.freeze({ executionsMs: 30 * 86_400_000, cronLedgerMs: 90 * 86_400_000 }),
  maxContextBytes: CRON_DEFAULTS.maxContextBytes,
  migrate: true,
  preparedStatements: true,
});

/** {@link DefaultRunnerConfig} with every field set and checked: all that internals ever see. */
export interface ResolvedRunnerConfig
  extends Required<
    Omit<DefaultRunnerConfig, 'workflows' | 'retention' | 'schema' | 'pool' | 'applicationName' | 'listen'>
  > {
  location: DatabaseLocation;
  schema: string;
  pool: ResolvedPoolOptions;
  applicationName: string;
  listen: ListenOption;
  workflows: Workflow[];
  retention: Required<RetentionConfig>;
}

type NumberRule = { min: number; integer: boolean; infinite?: boolean };

/** The longest finite duration option (100 years): waits of any length work, but instants must stay valid dates. */
const MAX_DURATION_MS = 100 * 365.25 * 86_400_000;

const POSITIVE_MS: NumberRule = { min: 1, integer: true };
const NUMBER_FIELDS = {
  maxConcurrentTasks: { min: 1, integer: true },
  taskTimeoutMs: { min: 1, integer: true, infinite: true },
  pipelineTimeoutMs: POSITIVE_MS,
  taskLeaseMs: { min: 30, integer: true },
  pollIntervalMs: POSITIVE_MS,
  cronPollIntervalMs: POSITIVE_MS,
  cronBatchSize: { min: 1, integer: true },
  cronMaxCatchupExecutions: { min: 1, integer: true },
  cronMaxOccurrencesPerTick: { min: 1, integer: true },
  cronMisfireThresholdMs: { min: 0, integer: true },
  cronMaxCatchupAgeMs: POSITIVE_MS,
  cronRecoveryIntervalMs: POSITIVE_MS,
  cronLostThresholdMs: POSITIVE_MS,
  cronMaxRecoveryAgeMs: POSITIVE_MS,
  cronMaxRecoveryAttempts: { min: 1, integer: true },
  maxContextBytes: { min: 2, integer: true },
} satisfies Record<string, NumberRule>;

const BOOLEAN_FIELDS = ['enableCronScheduling', 'cronEnableRecovery', 'migrate', 'preparedStatements'] as const;
const OTHER_FIELDS = ['database', 'schema', 'workflows', 'runnerId', 'retention', 'clock', 'logger'] as const;
const CONNECTION_FIELDS = ['pool', 'applicationName', 'listen'] as const;
const KNOWN_FIELDS = new Set<string>([
  ...Object.keys(NUMBER_FIELDS),
  ...BOOLEAN_FIELDS,
  ...OTHER_FIELDS,
  ...CONNECTION_FIELDS,
]);
const LOGGER_METHODS = ['debug', 'info', 'warn', 'error'] as const;

function checkNumber(field: string, value: unknown, rule: NumberRule): number {
  const finite = typeof value === 'number' && Number.isFinite(value);
  const ok =
    (value === Number.POSITIVE_INFINITY && rule.infinite === true) ||
    (finite && value >= rule.min && (!rule.integer || Number.isInteger(value)));
  if (!ok) {
    const kind = rule.integer ? 'an integer' : 'a number';
    const extra = rule.infinite ? ' (or Infinity)' : '';
    throw new ConfigurationError(`${field} must be ${kind} ≥ ${rule.min}${extra}, got ${JSON.stringify(value)}.`);
  }
  if (field.endsWith('Ms') && finite && value > MAX_DURATION_MS) {
    // Any length waits (timers are chained past setTimeout's 2³¹ ms), but now + duration must stay a valid date.
    const extra = rule.infinite ? '; use Infinity for no limit' : '';
    throw new ConfigurationError(
      `${field} is ${value} ms, over the limit of ${MAX_DURATION_MS} ms (100 years)${extra}.`,
    );
  }
  return value as number;
}

function checkWorkflows(value: unknown): Workflow[] {
  if (!Array.isArray(value)) {
    throw new ConfigurationError(`workflows must be an array of defineWorkflow() results, got ${typeof value}.`);
  }
  value.forEach((workflow, i) => {
    const candidate = workflow as Partial<Workflow> | null;
    if (typeof candidate?.name !== 'string' || !(candidate.taskById instanceof Map)) {
      throw new ConfigurationError(`workflows[${i}] is not a workflow; build each one with defineWorkflow().`);
    }
  });
  return [...value];
}

function checkRetention(value: unknown): Required<RetentionConfig> {
  if (value === undefined) return { ...RUNNER_DEFAULTS.retention };
  if (typeof value !== 'object' || value === null) {
    throw new ConfigurationError('retention must be an object like { executionsMs, cronLedgerMs }.');
  }
  const { executionsMs, cronLedgerMs, ...rest } = value as RetentionConfig;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) {
    throw new ConfigurationError(`retention.${unknown} is not an option; use executionsMs or cronLedgerMs.`);
  }
  const rule = { min: 1, integer: true, infinite: true };
  return {
    executionsMs: checkNumber('retention.executionsMs', executionsMs ?? RUNNER_DEFAULTS.retention.executionsMs, rule),
    cronLedgerMs: checkNumber('retention.cronLedgerMs', cronLedgerMs ?? RUNNER_DEFAULTS.retention.cronLedgerMs, rule),
  };
}

/**
 * Retention must outlast the recovery window: a pipeline or ledger row deleted while recovery
 * may still need it (lost threshold, then up to cronMaxRecoveryAgeMs of attempts) lets an
 * occurrence run twice or vanish.
 */
function checkRetentionWindow(
  retention: Required<RetentionConfig>,
  cron: { cronMaxRecoveryAgeMs: number; cronLostThresholdMs: number },
): void {
  const windowMs = cron.cronMaxRecoveryAgeMs + cron.cronLostThresholdMs;
  for (const option of ['executionsMs', 'cronLedgerMs'] as const) {
    if (retention[option] > windowMs) continue;
    throw new ConfigurationError(
      `retention.${option} (${retention[option]}) must exceed cronMaxRecoveryAgeMs + cronLostThresholdMs (${windowMs}): recovery may still need those rows. Raise retention.${option} or lower cronMaxRecoveryAgeMs.`,
    );
  }
}

function checkRunnerId(value: unknown): string {
  if (value === undefined) return `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  if (typeof value !== 'string' || value.trim() === '' || value.length > 200 || value.includes('\u0000')) {
    throw new ConfigurationError(
      `runnerId must be a non-empty string of at most 200 characters without NUL characters, got ${JSON.stringify(value)}.`,
    );
  }
  return value;
}

function checkClock(value: unknown): Clock {
  if (value === undefined) return systemClock;
  if (typeof (value as Clock | null)?.now !== 'function') {
    throw new ConfigurationError('clock must be an object with a now(): Date method, such as ManualClock.');
  }
  return value as Clock;
}

function checkLogger(value: unknown): Logger {
  if (value === undefined) return silentLogger;
  const missing = LOGGER_METHODS.find((m) => typeof (value as Record<string, unknown> | null)?.[m] !== 'function');
  if (missing !== undefined) {
    throw new ConfigurationError(`logger must be pino-compatible (debug, info, warn, error); it has no ${missing}().`);
  }
  return value as Logger;
}

/**
 * Checks a user's configuration and fills in every default.
 * @throws ConfigurationError naming the first invalid or unknown field and what it accepts.
 */
export function resolveConfig(config: DefaultRunnerConfig = {}): ResolvedRunnerConfig {
  if (typeof config !== 'object' || config === null) {
    throw new ConfigurationError('DefaultRunner.create() takes a configuration object (or nothing).');
  }
  const unknown = Object.keys(config).find((key) => !KNOWN_FIELDS.has(key));
  if (unknown !== undefined) {
    throw new ConfigurationError(
      `"${unknown}" is not a DefaultRunner option; check its spelling against DefaultRunnerConfig.`,
    );
  }
  const numbers = Object.fromEntries(
    Object.entries(NUMBER_FIELDS).map(([field, rule]) => {
      const value = config[field as keyof typeof NUMBER_FIELDS] ?? RUNNER_DEFAULTS[field as keyof typeof NUMBER_FIELDS];
      return [field, checkNumber(field, value, rule)];
    }),
  ) as Record<keyof typeof NUMBER_FIELDS, number>;
  const booleans = Object.fromEntries(
    BOOLEAN_FIELDS.map((field) => {
      const value = config[field] ?? RUNNER_DEFAULTS[field];
      if (typeof value !== 'boolean') {
        throw new ConfigurationError(`${field} must be true or false, got ${JSON.stringify(value)}.`);
      }
      return [field, value];
    }),
  ) as Record<(typeof BOOLEAN_FIELDS)[number], boolean>;
  const database = config.database ?? RUNNER_DEFAULTS.database;
  const retention = checkRetention(config.retention);
  checkRetentionWindow(retention, numbers);
  const runnerId = checkRunnerId(config.runnerId);
  return {
    ...numbers,
    ...booleans,
    database,
    location: parseDatabaseUrl(database),
    schema: validateSchemaName(config.schema ?? RUNNER_DEFAULTS.schema),
    pool: resolvePoolOptions(config.pool),
    applicationName:
      config.applicationName === undefined
        ? defaultApplicationName(runnerId)
        : validateApplicationName(config.applicationName),
    listen: resolveListenOption(config.listen ?? RUNNER_DEFAULTS.listen),
    workflows: checkWorkflows(config.workflows ?? []),
    runnerId,
    retention,
    clock: checkClock(config.clock),
    logger: checkLogger(config.logger),
  };
}

/**
 * The cron settings of a resolved config, named as `@orreryjs/cron`'s `CronSettings` (without
 * the `cron` prefix), for the CronService the runner composes.
 */
export function cronSettingsOf(config: ResolvedRunnerConfig) {
  return {
    pollIntervalMs: config.cronPollIntervalMs,
    batchSize: config.cronBatchSize,
    maxCatchupExecutions: config.cronMaxCatchupExecutions,
    maxOccurrencesPerTick: config.cronMaxOccurrencesPerTick,
    misfireThresholdMs: config.cronMisfireThresholdMs,
    maxCatchupAgeMs: config.cronMaxCatchupAgeMs,
    enableScheduling: config.enableCronScheduling,
    enableRecovery: config.cronEnableRecovery,
    recoveryIntervalMs: config.cronRecoveryIntervalMs,
    lostThresholdMs: config.cronLostThresholdMs,
    maxRecoveryAgeMs: config.cronMaxRecoveryAgeMs,
    maxRecoveryAttempts: config.cronMaxRecoveryAttempts,
    maxContextBytes: config.maxContextBytes,
  };
}
