import { DefaultRunner } from '@orreryjs/runner';
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
