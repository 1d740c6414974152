import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Storage } from '@orreryjs/core';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';

/** A fresh SQLite file path in its own temp directory, and a function that removes it. */
export function tempSqliteFile(): { filename: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-sqlite-'));
  return { filename: join(dir, 'orrery.db'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A SQLite storage on a fresh file: the storage, its file, and how to close it and delete the file. */
export async function tempSqliteStorage(): Promise<{ storage: Storage; filename: string; remove(): Promise<void> }> {
  const file = tempSqliteFile();
  const storage = await openSqliteStorage({ filename: file.filename });
  return {
    storage,
    filename: file.filename,
    remove: async () => {
      await storage.close();
      file.remove();
    },
  };
}
