import { isOrreryError } from '@orreryjs/core';
import type { Command } from 'commander';
import { type CliIo, type OutputOptions, writeJson, writeRecord } from '../output.js';
import { type DatabaseOptions, databaseCommand, redactDatabaseUrl, withClient } from '../runner-session.js';

/** What `orrery migrate` found. */
type MigrationState = 'up-to-date' | 'migrated';

/** `orrery migrate`: brings the database schema up to date with this version of Orrery. */
export function registerMigrateCommand(program: Command, io: CliIo): void {
  databaseCommand(
    program,
    'migrate',
    'Create the tables, or apply the migrations this version needs; safe to repeat',
  ).action(async (options: DatabaseOptions & OutputOptions) => {
    const state = await migrate(options);
    const report = { database: redactDatabaseUrl(options.database), schema: options.schema ?? null, state };
    if (options.json) {
      writeJson(io, report);
      return;
    }
    writeRecord(io, [
      ['Database', report.database],
      ['Schema', report.schema ?? '-'],
      ['State', state === 'migrated' ? 'migrated: pending migrations applied' : 'up to date: nothing to apply'],
    ]);
  });
}

// The runner does not report which migrations it applied, so ask first whether the schema
// is current (migrate: false refuses a stale one), and migrate only when it is not. A
// database that cannot be opened at all fails the second attempt with its own error.
async function migrate(database: DatabaseOptions): Promise<MigrationState> {
  try {
    await withClient(database, { migrate: false, mustExist: 'folder' }, async () => {});
    return 'up-to-date';
  } catch (error) {
    // A missing folder is final: migrate creates the file, never a folder for a mistyped path.
    if (!isOrreryError(error, 'CONFIGURATION') || /folder of SQLite database/.test(error.message)) throw error;
  }
  await withClient(database, { migrate: true, mustExist: 'folder' }, async () => {});
  return 'migrated';
}
