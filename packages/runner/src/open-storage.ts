import { ConfigurationError, type Storage } from '@orreryjs/core';
import type { ResolvedRunnerConfig } from './config.js';

/**
 * Opens the database the config names. Each adapter is loaded only when its URL asks for it
 * (dynamic import), so a SQLite user never loads `pg` and a Postgres user never loads the
 * native SQLite driver.
 * @throws ConfigurationError for a database that cannot be opened, an adapter that is not
 *   installed, or (with `migrate: false`) a stale schema.
 * @throws DatabaseError when a migration fails.
 */
export async function openStorage(config: ResolvedRunnerConfig): Promise<Storage> {
  const { location, migrate } = config;
  switch (location.kind) {
    case 'sqlite': {
      const { openSqliteStorage } = await loadAdapter(
        '@orreryjs/sqlite-adapter',
        'sqlite:',
        () => import('@orreryjs/sqlite-adapter'),
      );
      return openSqliteStorage({ filename: location.filename, migrate });
    }
    case 'postgres': {
      const { openPostgresStorage } = await loadAdapter(
        '@orreryjs/postgres-adapter',
        'postgres://',
        () => import('@orreryjs/postgres-adapter'),
      );
      return openPostgresStorage({
        connectionString: location.connectionString,
        schema: config.schema,
        migrate,
        pool: config.pool,
        applicationName: config.applicationName,
        preparedStatements: config.preparedStatements,
      });
    }
  }
}

/**
 * Imports an adapter package, turning "that package is not installed" (and only that: a
 * missing dependency of an installed adapter stays as it is) into a ConfigurationError that
 * says what to install. `@orreryjs/postgres-adapter` is an optional peer of the runner, so a
 * SQLite-only install lacks it.
 * @throws ConfigurationError when `packageName` itself cannot be found.
 */
export async function loadAdapter<T>(packageName: string, urlPrefix: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isPackageMissing(error, packageName)) {
      throw new ConfigurationError(
        `A ${urlPrefix} database URL needs ${packageName}, which is not installed. ` +
          `Install it beside @orreryjs/runner: npm install ${packageName}`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Node's "Cannot find package 'X' imported from …", for X itself rather than one of its dependencies. */
function isPackageMissing(error: unknown, packageName: string): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return (
    (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
    (error.message.includes(`package '${packageName}'`) || error.message.includes(`module '${packageName}'`))
  );
}
