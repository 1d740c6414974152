import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { ConfigurationError, DatabaseError, newId, type Storage } from '@orreryjs/core';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../test/support/postgres.js';
import { openPostgresStorage, POSTGRES_DEFAULTS } from '../src/index.js';
import { tablesIn } from '../src/schema.js';
import { createHandle } from '../src/transaction.js';

const schemas: string[] = [];
const opened: Storage[] = [];
afterEach(async () => {
  for (const storage of opened.splice(0)) await storage.close();
});
afterAll(async () => {
  for (const schema of schemas) await dropSchema(schema);
});

function newSchema(): string {
  const schema = freshSchemaName();
  schemas.push(schema);
  return schema;
}

async function open(schema: string, options: { migrate?: boolean } = {}): Promise<Storage> {
  const storage = await openPostgresStorage({ connectionString: postgresUrl(), schema, ...options });
  opened.push(storage);
  return storage;
}

/** Runs one query on its own connection, outside any storage. */
async function query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** A URL on the test server with one part replaced. */
function urlWith(change: (url: URL) => void): string {
  const url = new URL(postgresUrl());
  change(url);
  return url.toString();
}

const runner = { id: 'r1', hostname: 'h', pid: 1, workflows: ['wf'], startedAt: new Date(0), heartbeatAt: new Date(0) };

describe('openPostgresStorage', () => {
  it('creates a missing schema with every table in it, and reports the postgres dialect', async () => {
    const schema = newSchema();
    const storage = await open(schema);
    expect(storage.dialect).toBe('postgres');
    const tables = await query<{ table_name: string }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
      [schema],
    );
    expect(tables.map((row) => row.table_name)).toEqual([
      '__orrery_migrations',
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

  it("points the task table's foreign key at the pipeline table of its own schema, not public's", async () => {
    const schema = newSchema();
    await open(schema);
    const [fk] = await query<{ target: string; cascades: boolean }>(
      `SELECT confrelid::regclass::text AS target, confdeltype = 'c' AS cascades FROM pg_constraint
       WHERE contype = 'f' AND conrelid = to_regclass($1)`,
      [`"${schema}".task_executions`],
    );
    expect(fk).toEqual({ target: `${schema}.pipeline_executions`, cascades: true });
  });

  it('keeps tenants apart: each schema sees only its own rows', async () => {
    const [first, second] = [await open(newSchema()), await open(newSchema())];
    await first.runners.heartbeat(runner);
    expect((await first.runners.listRunners()).map((row) => row.id)).toEqual(['r1']);
    expect(await second.runners.listRunners()).toEqual([]);
  });

  it('lets several pools opening one fresh schema at once all migrate it, applying each migration once', async () => {
    const schema = newSchema();
    const storages = await Promise.all(Array.from({ length: 4 }, () => open(schema)));
    await storages[0]!.runners.heartbeat(runner);
    for (const storage of storages) expect(await storage.runners.listRunners()).toHaveLength(1);
    const [applied] = await query<{ count: number }>(
      `SELECT count(*)::int AS count FROM "${schema}".__orrery_migrations`,
    );
    const [hashes] = await query<{ count: number }>(
      `SELECT count(DISTINCT hash)::int AS count FROM "${schema}".__orrery_migrations`,
    );
    expect(applied!.count).toBeGreaterThan(0);
    expect(applied!.count).toBe(hashes!.count);
  });

  it('applies migrations once: reopening changes nothing, and migrate: false accepts a current schema', async () => {
    const schema = newSchema();
    await (await open(schema)).close();
    const count = async () =>
      (await query<{ count: number }>(`SELECT count(*)::int AS count FROM "${schema}".__orrery_migrations`))[0]!.count;
    const before = await count();
    await (await open(schema)).close();
    expect(await count()).toBe(before);
    const storage = await open(schema, { migrate: false });
    expect(await storage.runners.listRunners()).toEqual([]);
  });

  it('refuses a schema behind the code with migrate: false, telling the user to migrate, and creates nothing', async () => {
    const schema = newSchema();
    const failure = await openPostgresStorage({ connectionString: postgresUrl(), schema, migrate: false }).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ConfigurationError);
    expect((failure as Error).message).toContain(`"${schema}"`);
    expect((failure as Error).message).toMatch(/migrate: true/);
    expect(await query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).toEqual([]);
  });

  it.each([
    ['upper case', 'Tenant_A'],
    ['a hyphen', 'tenant-a'],
    ['a leading digit', '1tenant'],
    ['the pg_ prefix', 'pg_tenant'],
    ['the system schema information_schema', 'information_schema'],
    ['the system schema pg_catalog', 'pg_catalog'],
    ['the system schema pg_toast', 'pg_toast'],
    ['SQL in it', 'x"; DROP SCHEMA public; --'],
    ['64 characters', 'a'.repeat(64)],
    ['nothing', ''],
  ])('refuses a schema name with %s before connecting, naming it', async (_what, schema) => {
    // Port 1 refuses connections: a ConfigurationError about the name proves nothing was attempted.
    const unreachable = 'postgres://nobody@127.0.0.1:1/none';
    const failure = await openPostgresStorage({ connectionString: unreachable, schema }).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ConfigurationError);
    expect((failure as Error).message).toContain(`Schema name ${JSON.stringify(schema)} is invalid`);
  });

  it('uses the public schema, 10 connections, prepared statements and the application name orrery unless told otherwise', () => {
    expect(POSTGRES_DEFAULTS).toEqual({
      schema: 'public',
      migrate: true,
      pool: { max: 10, connectionTimeoutMs: 10_000, idleTimeoutMs: 30_000, statementTimeoutMs: undefined },
      applicationName: 'orrery',
      preparedStatements: true,
      listen: true,
    });
  });

  it.each([
    ['pool.max', { pool: { max: 0 } }],
    ['pool.max', { pool: { max: 1.5 } }],
    ['pool.connectionTimeoutMs', { pool: { connectionTimeoutMs: -1 } }],
    ['pool.idleTimeoutMs', { pool: { idleTimeoutMs: Number.NaN } }],
    ['pool.statementTimeoutMs', { pool: { statementTimeoutMs: 2 ** 31 } }],
    ['pool.size', { pool: { size: 4 } }],
    ['applicationName', { applicationName: '' }],
    ['applicationName', { applicationName: 'a'.repeat(64) }],
    ['applicationName', { applicationName: 'caf\u00e9' }],
    ['listen', { listen: 'yes' }],
    ['listen.database', { listen: { database: 'mysql://x' } }],
    ['listen.url', { listen: { url: 'postgres://x' } }],
  ])('refuses an invalid %s before connecting, naming it', async (name, options) => {
    const unreachable = 'postgres://nobody@127.0.0.1:1/none';
    const failure = await openPostgresStorage({ connectionString: unreachable, ...options } as never).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ConfigurationError);
    expect((failure as Error).message).toContain(name);
  });

  it('names its connections with applicationName and holds at most pool.max of them', async () => {
    const applicationName = `orrery-open-test-${newId().slice(0, 8)}`;
    const storage = await openPostgresStorage({
      connectionString: postgresUrl(),
      schema: newSchema(),
      applicationName,
      pool: { max: 2 },
    });
    opened.push(storage);
    await Promise.all([1, 2, 3, 4].map(() => storage.runners.listRunners()));
    const [row] = await query<{ count: number }>(
      'SELECT count(*)::int AS count FROM pg_stat_activity WHERE application_name = $1',
      [applicationName],
    );
    expect(row!.count).toBeGreaterThanOrEqual(1);
    expect(row!.count).toBeLessThanOrEqual(2);
  });

  it('cancels a statement that runs past pool.statementTimeoutMs with a DatabaseError', async () => {
    const schema = newSchema();
    const storage = await openPostgresStorage({
      connectionString: postgresUrl(),
      schema,
      pool: { statementTimeoutMs: 300 },
    });
    opened.push(storage);
    // Another session holds the table: the storage's read waits on the lock until its timeout cancels it.
    const blocker = new pg.Client({ connectionString: postgresUrl() });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`LOCK TABLE "${schema}".runners IN ACCESS EXCLUSIVE MODE`);
      const failure = await storage.runners.listRunners().catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(DatabaseError);
      expect((failure as Error).message).toMatch(/statement timeout/);
    } finally {
      await blocker.query('ROLLBACK');
      await blocker.end();
    }
  });

  it('refuses a URL that is not a postgres:// URL', async () => {
    const failure = await openPostgresStorage({ connectionString: 'mysql://localhost/db' }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ConfigurationError);
    expect((failure as Error).message).toMatch(/postgres:\/\/user:password@host:5432\/database/);
  });

  it('reports a server that refuses the connection as a ConfigurationError naming the URL without its password', async () => {
    const url = 'postgres://orrery:s3cret@127.0.0.1:1/orrery';
    const failure = await openPostgresStorage({ connectionString: url, schema: newSchema() }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ConfigurationError);
    const message = (failure as Error).message;
    expect(message).toContain('Cannot connect to PostgreSQL at postgres://orrery:***@127.0.0.1:1/orrery');
    expect(message).toMatch(/server is running/);
    expect(message).not.toContain('s3cret');
    expect((failure as Error).cause).toBeInstanceOf(Error);
  });

  it('fails with a DatabaseError naming host, port and timeout when the server accepts TCP but never answers', async () => {
    // A server that takes the connection and never says a word: before pool.connectionTimeoutMs, open hung forever.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const { port } = silent.address() as { port: number };
    try {
      const failure = await openPostgresStorage({
        connectionString: `postgres://nobody@127.0.0.1:${port}/none`,
        pool: { connectionTimeoutMs: 300 },
      }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(DatabaseError);
      const message = (failure as Error).message;
      expect(message).toContain('host 127.0.0.1');
      expect(message).toContain(`port ${port}`);
      expect(message).toContain('300 ms');
      expect(sockets.length).toBeGreaterThan(0);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it('fails open with a DatabaseError, not a crash, when the migration connection is terminated', async () => {
    const schema = newSchema();
    const applicationName = `orrery-migrate-test-${newId().slice(0, 8)}`;
    // Another session holds the migration lock, so the open waits on it, mid-transaction, until its backend is terminated.
    const blocker = new pg.Client({ connectionString: postgresUrl() });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`orrery:migrate:${schema}`]);
      const opening = openPostgresStorage({ connectionString: postgresUrl(), schema, applicationName }).catch(
        (error: unknown) => error,
      );
      let terminated = 0;
      while (terminated === 0) {
        const rows = await query<{ done: boolean }>(
          `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity
           WHERE application_name = $1 AND wait_event_type = 'Lock'`,
          [applicationName],
        );
        terminated = rows.length;
        if (terminated === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const failure = await opening;
      expect(failure).toBeInstanceOf(DatabaseError);
      expect((failure as Error).message).toMatch(/^openPostgresStorage failed: /);
    } finally {
      await blocker.query('ROLLBACK');
      await blocker.end();
    }
  });

  it('reports a database that does not exist as a ConfigurationError saying so', async () => {
    const url = urlWith((u) => {
      u.pathname = `/orrery_missing_${newId().slice(0, 8)}`;
    });
    const failure = await openPostgresStorage({ connectionString: url, schema: newSchema() }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ConfigurationError);
    expect((failure as Error).message).toContain('the database does not exist');
  });

  it('closes idempotently; a call after close fails with a DatabaseError naming the method', async () => {
    const storage = await openPostgresStorage({ connectionString: postgresUrl(), schema: newSchema() });
    await storage.close();
    await expect(storage.close()).resolves.toBeUndefined();
    const failure = await storage.executions.getPipeline(newId()).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(DatabaseError);
    expect((failure as Error).message).toMatch(/^getPipeline failed: /);
  });
});

describe('session independence', () => {
  it("names its schema in every statement and reads instants in the server's time zone, whatever the session says", async () => {
    const schema = newSchema();
    const decoy = newSchema();
    await query(`CREATE SCHEMA "${decoy}"`);
    // The session points elsewhere and runs in a zone 5:45 ahead: neither may change where rows go or what they read as.
    const url = urlWith((u) => u.searchParams.set('options', `-c search_path=${decoy} -c TimeZone=Asia/Kathmandu`));
    const storage = await openPostgresStorage({ connectionString: url, schema });
    opened.push(storage);
    const at = new Date('2026-03-04T05:06:07.089Z');
    await storage.runners.heartbeat({ ...runner, startedAt: at, heartbeatAt: at });
    expect(await storage.runners.listRunners()).toEqual([
      { ...runner, startedAt: at, heartbeatAt: at, stoppedAt: null },
    ]);
    const tables = await query<{ schema: string }>(
      'SELECT table_schema AS schema FROM information_schema.tables WHERE table_schema = ANY($1) AND table_name = $2',
      [[schema, decoy], 'runners'],
    );
    expect(tables.map((t) => t.schema)).toEqual([schema]);
    const offsetMs = (await storage.runners.databaseNow()).getTime() - Date.now();
    expect(Math.abs(offsetMs)).toBeLessThan(60_000);
  });

  it('refuses a server whose DateStyle it cannot read back, with a ConfigurationError saying how to fix it', async () => {
    const url = urlWith((u) => u.searchParams.set('options', '-c DateStyle=SQL,DMY'));
    const failure = openPostgresStorage({ connectionString: url, schema: newSchema() });
    await expect(failure).rejects.toThrow(ConfigurationError);
    await expect(failure).rejects.toThrow(/DateStyle "SQL, DMY".*ALTER ROLE/);
  });

  it('refuses a preparedStatements option that is not a boolean before connecting', async () => {
    const failure = openPostgresStorage({
      connectionString: postgresUrl(),
      preparedStatements: 'no' as unknown as boolean,
    });
    await expect(failure).rejects.toThrow(/preparedStatements must be true or false, got "no"/);
  });

  it('works the same with preparedStatements: false, naming no statement', async () => {
    const schema = newSchema();
    const storage = await openPostgresStorage({ connectionString: postgresUrl(), schema, preparedStatements: false });
    opened.push(storage);
    await storage.runners.heartbeat(runner);
    expect((await storage.runners.listRunners()).map((r) => r.id)).toEqual(['r1']);
    const pool = new pg.Pool({ connectionString: postgresUrl(), max: 1 });
    try {
      expect(createHandle(pool, tablesIn(schema), false).named('orrery_x')).toBeUndefined();
      expect(createHandle(pool, tablesIn(schema), true).named('orrery_x')).toBe('orrery_x');
    } finally {
      await pool.end();
    }
  });
});
