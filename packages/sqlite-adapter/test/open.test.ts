import { ConfigurationError, newId, parseDatabaseUrl, type Storage } from '@orreryjs/core';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import { openSqliteStorage } from '../src/index.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempFile(): string {
  const file = tempSqliteFile();
  cleanups.push(file.remove);
  return file.filename;
}

async function open(filename: string, options: { migrate?: boolean } = {}): Promise<Storage> {
  const storage = await openSqliteStorage({ filename, ...options });
  cleanups.push(() => storage.close());
  return storage;
}

function pragmas(filename: string): Record<string, unknown> {
  const db = new Database(filename, { readonly: true });
  try {
    return { journal: db.pragma('journal_mode', { simple: true }) };
  } finally {
    db.close();
  }
}

describe('openSqliteStorage', () => {
  it('creates the schema in a new file, puts it in WAL mode and reports the sqlite dialect', async () => {
    const filename = tempFile();
    const storage = await open(filename);
    expect(storage.dialect).toBe('sqlite');
    expect(pragmas(filename).journal).toBe('wal');
    const db = new Database(filename, { readonly: true });
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .pluck()
      .all();
    db.close();
    expect(tables).toEqual([
      '__drizzle_migrations',
      'concurrency_slots',
      'cron_executions',
      'cron_schedules',
      'pipeline_executions',
      'rate_limit_buckets',
      'rate_limit_starts',
      'runners',
      'signals',
      'task_executions',
      'workflows',
    ]);
  });

  it('enforces foreign keys: deleting a pipeline deletes its tasks', async () => {
    const filename = tempFile();
    const storage = await open(filename);
    const now = new Date('2026-01-01T00:00:00Z');
    const id = newId();
    await storage.executions.createPipeline({
      id,
      workflowName: 'wf',
      workflowVersion: 'v1',
      input: {},
      idempotencyKey: null,
      scheduledTime: null,
      now,
      tasks: [{ id: newId(), taskId: 'a', position: 0, pendingDeps: 0 }],
    });
    await storage.executions.cancelPipeline(id, now);
    expect(await storage.executions.deleteTerminalPipelines(new Date('2026-01-02T00:00:00Z'), 10)).toBe(1);
    expect(await storage.executions.listTasks(id)).toEqual([]);
  });

  it('opens an in-memory database for sqlite::memory:, private to each open', async () => {
    const location = parseDatabaseUrl('sqlite::memory:');
    expect(location).toEqual({ kind: 'sqlite', filename: ':memory:' });
    const first = await open(':memory:');
    const second = await open(':memory:');
    await first.runners.heartbeat({
      id: 'r1',
      hostname: 'h',
      pid: 1,
      workflows: [],
      startedAt: new Date(0),
      heartbeatAt: new Date(0),
    });
    expect(await first.runners.listRunners()).toHaveLength(1);
    expect(await second.runners.listRunners()).toEqual([]);
  });

  it('opens the file named by a sqlite: URL, creating missing directories', async () => {
    const base = tempFile();
    const location = parseDatabaseUrl(`sqlite://${base.replace(/orrery\.db$/, 'nested/dir/orrery.db')}`);
    if (location.kind !== 'sqlite') throw new Error('expected a sqlite location');
    expect(location.filename.startsWith('/')).toBe(true);
    const storage = await open(location.filename);
    expect(await storage.runners.listRunners()).toEqual([]);
  });

  it('applies migrations once: reopening a migrated file changes nothing', async () => {
    const filename = tempFile();
    await (await open(filename)).close();
    await (await open(filename)).close();
    const db = new Database(filename, { readonly: true });
    const applied = db.prepare('SELECT count(*) FROM __drizzle_migrations').pluck().get();
    db.close();
    expect(applied).toBeGreaterThan(0);
    const storage = await open(filename, { migrate: false });
    expect(await storage.runners.listRunners()).toEqual([]);
  });

  it('refuses a file behind the code with migrate: false, telling the user to migrate', async () => {
    const filename = tempFile();
    const attempt = openSqliteStorage({ filename, migrate: false });
    await expect(attempt).rejects.toBeInstanceOf(ConfigurationError);
    await expect(openSqliteStorage({ filename, migrate: false })).rejects.toThrow(/migrate: true/);
  });

  it('refuses a path that cannot be opened with a ConfigurationError naming it', async () => {
    const filename = tempFile();
    await open(filename);
    await expect(openSqliteStorage({ filename: `${filename}/inside-a-file.db` })).rejects.toThrow(ConfigurationError);
  });

  it('refuses a negative busy timeout', async () => {
    await expect(openSqliteStorage({ filename: ':memory:', busyTimeoutMs: -1 })).rejects.toThrow(/busyTimeoutMs/);
  });

  it('closes idempotently', async () => {
    const storage = await openSqliteStorage({ filename: ':memory:' });
    await storage.close();
    await expect(storage.close()).resolves.toBeUndefined();
  });
});
