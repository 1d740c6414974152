import type { Storage } from '@orreryjs/core';
import type { ResolvedRunnerConfig } from './config.js';

/**
 * Opens the database the config names. Each adapter is loaded only when its URL asks for it
 * (dynamic import), so a SQLite user never loads `pg` and a Postgres user never loads the
 * native SQLite driver.
 * @throws ConfigurationError for a database that cannot be opened or (with `migrate: false`) a stale schema.
 * @throws DatabaseError when a migration fails.
 */
export async function openStorage(config: ResolvedRunnerConfig): Promise<Storage> {
  const { location, migrate } = config;
  switch (location.kind) {
    case 'sqlite': {
      const { openSqliteStorage } = await import('@orreryjs/sqlite-adapter');
      return openSqliteStorage({ filename: location.filename, migrate });
    }
    case 'postgres': {
      const { openPostgresStorage } = await import('@orreryjs/postgres-adapter');
      return openPostgresStorage({
        connectionString: location.connectionString,
        schema: config.schema,
        migrate,
        pool: config.pool,
        applicationName: config.applicationName,
        listen: config.listen,
        logger: config.logger,
      });
    }
  }
}
