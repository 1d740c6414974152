import { DefaultRunner } from '@orreryjs/runner';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../../test/support/postgres.js';
import { tempSqliteFile } from '../../../../test/support/sqlite.js';
import { flaky, more, report } from '../fixtures/workflows.js';
import { orreryJson } from './cli.js';

/** A fresh SQLite database file, migrated through the CLI, with its `sqlite:` URL. */
export function migratedSqliteDatabase(): { url: string; remove: () => void } {
  const { filename, remove } = tempSqliteFile();
  const url = `sqlite:${filename}`;
  orreryJson(['migrate', '--database', url]);
  return { url, remove };
}

/**
 * Stores the fixture workflows in the database's `workflows` table, as a worker started with
 * `orrery worker test/fixtures/workflows.ts` does: after that, the CLI knows them by name.
 */
export async function registerFixtureWorkflows(database: string, schema?: string): Promise<void> {
  const runner = await DefaultRunner.create({
    database,
    ...(schema === undefined ? {} : { schema }),
    workflows: [report, flaky, ...more],
    enableCronScheduling: false,
  });
  await runner.shutdown();
}

/** A database for a runner and the CLI: its URL (and schema), and how the CLI names it. */
export interface TestDatabase {
  database: string;
  schema?: string;
  /** As not-found errors name it. */
  where: string;
  /** The environment that points the CLI at it. */
  env: Record<string, string>;
  remove(): Promise<void>;
}

/** The databases a suite that runs a runner beside the CLI checks: a fresh SQLite file, a fresh Postgres schema. */
export const TEST_DATABASES: ReadonlyArray<{ name: string; open(): TestDatabase }> = [
  {
    name: 'sqlite',
    open: () => {
      const { url, remove } = migratedSqliteDatabase();
      return { database: url, where: url, env: { ORRERY_DATABASE_URL: url }, remove: async () => remove() };
    },
  },
  {
    name: 'postgres',
    open: () => {
      const schema = freshSchemaName();
      const url = postgresUrl();
      return {
        database: url,
        schema,
        where: `${url} (schema ${schema})`,
        env: { ORRERY_DATABASE_URL: url, ORRERY_SCHEMA: schema },
        remove: () => dropSchema(schema),
      };
    },
  },
];
