import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh SQLite file path in its own temp directory, and a function that removes it. */
export function tempSqliteFile(): { filename: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-sqlite-'));
  return { filename: join(dir, 'orrery.db'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
