import { ConfigurationError } from '@orreryjs/core';
import { type DefaultRunnerConfig, type ResolvedRunnerConfig, resolveConfig } from './config.js';

/**
 * The fields of {@link DefaultRunnerConfig} an {@link OrreryClient} takes: where the database
 * is and how to reach it, and the checks and services every call needs. Names not (yet) in
 * DefaultRunnerConfig are ignored by the type and refused by {@link resolveClientConfig}.
 */
const CLIENT_FIELDS = [
  'database',
  'schema',
  'pool',
  'listen',
  'preparedStatements',
  'applicationName',
  'maxContextBytes',
  'pollIntervalMs',
  'migrate',
  'retention',
  'clock',
  'logger',
  'mustExist',
] as const;

/**
 * Settings of {@link OrreryClient.create}: the storage subset of {@link DefaultRunnerConfig},
 * with the same meanings and defaults (`retention` is the runners' setting: a backfill refuses
 * slots older than `retention.cronLedgerMs`, whose ledger rows the runners' sweep may have
 * deleted), plus `mustExist`. Every field is optional.
 */
export type OrreryClientConfig = Pick<
  DefaultRunnerConfig,
  Extract<(typeof CLIENT_FIELDS)[number], keyof DefaultRunnerConfig>
> & {
  /**
   * SQLite only: what must exist already, so that a mistyped path creates nothing. `'file'`
   * refuses a missing database file; `'folder'` refuses a missing parent folder (the file
   * may be created). Unset, both are created as needed. Ignored for Postgres.
   * @default undefined
   */
  mustExist?: 'file' | 'folder';
};

const KNOWN = new Set<string>(CLIENT_FIELDS);

/**
 * Checks a client's configuration and fills in every default, as for a runner.
 * @throws ConfigurationError for a runner-only or unknown field, or an invalid value.
 */
export function resolveClientConfig(config: OrreryClientConfig = {}): ResolvedRunnerConfig {
  if (typeof config !== 'object' || config === null) {
    throw new ConfigurationError('OrreryClient.create() takes a configuration object (or nothing).');
  }
  const unknown = Object.keys(config).find((key) => !KNOWN.has(key));
  if (unknown !== undefined) {
    throw new ConfigurationError(
      `"${unknown}" is not an OrreryClient option (it takes ${CLIENT_FIELDS.join(', ')}); options that run tasks or cron belong to DefaultRunner.create().`,
    );
  }
  const { mustExist, ...runnerFields } = config;
  if (mustExist !== undefined && mustExist !== 'file' && mustExist !== 'folder') {
    throw new ConfigurationError(`mustExist must be 'file' or 'folder', got ${JSON.stringify(mustExist)}.`);
  }
  return resolveConfig(runnerFields as DefaultRunnerConfig);
}
