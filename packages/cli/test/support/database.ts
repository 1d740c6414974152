import { tempSqliteFile } from '../../../../test/support/sqlite.js';
import { orreryJson } from './cli.js';

/** A fresh SQLite database file, migrated through the CLI, with its `sqlite:` URL. */
export function migratedSqliteDatabase(): { url: string; remove: () => void } {
  const { filename, remove } = tempSqliteFile();
  const url = `sqlite:${filename}`;
  orreryJson(['migrate', '--database', url]);
  return { url, remove };
}
