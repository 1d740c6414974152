import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startPgbouncer } from './pgbouncer.js';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
    /** PgBouncer in transaction mode in front of the same server. */
    pgbouncerUrl: string;
  }
}

const LOCAL_URL = 'postgres://postgres@127.0.0.1:5432/test';
const THROWAWAY_PORT = 54329;

/**
 * Finds a PostgreSQL server for the suite: TEST_DATABASE_URL, else the local server, else a
 * throwaway cluster started here; then starts Debian's PgBouncer in transaction mode in front
 * of it (installing it when missing). Never skips: with no server or no PgBouncer, the run fails.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let stop = async () => {};
  let url = process.env.TEST_DATABASE_URL;
  if (url === undefined && (await canConnect(LOCAL_URL))) url = LOCAL_URL;
  if (url === undefined) {
    const cluster = startThrowawayCluster();
    url = cluster.url;
    stop = cluster.stop;
  }
  if (!(await canConnect(url))) {
    throw new Error(`PostgreSQL is required by the test suite and ${url} does not answer; set TEST_DATABASE_URL.`);
  }
  process.env.ORRERY_TEST_POSTGRES_URL = url;
  project.provide('postgresUrl', url);
  console.log(`[orrery tests] PostgreSQL at ${url.replace(/:[^:@/]*@/, ':***@')}`);
  let pgbouncer: Awaited<ReturnType<typeof startPgbouncer>>;
  try {
    pgbouncer = await startPgbouncer(url, canConnect);
  } catch (error) {
    await stop();
    throw error;
  }
  project.provide('pgbouncerUrl', pgbouncer.url);
  return async () => {
    await pgbouncer.stop();
    await stop();
  };
}

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** initdb refuses root, so the cluster is created and run as the `postgres` OS user. */
function startThrowawayCluster(): { url: string; stop: () => Promise<void> } {
  const bin = findPostgresBin();
  const dir = mkdtempSync(join(tmpdir(), 'orrery-pg-'));
  chmodSync(dir, 0o777);
  const asPostgres = (cmd: string, args: string[]) => {
    const isRoot = process.getuid?.() === 0;
    const [file, argv] = isRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
    execFileSync(file, argv, { stdio: 'pipe' });
  };
  const data = join(dir, 'data');
  asPostgres(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  asPostgres(join(bin, 'pg_ctl'), [
    '-D',
    data,
    '-l',
    join(dir, 'log'),
    '-w',
    '-o',
    `-p ${THROWAWAY_PORT} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
    'start',
  ]);
  asPostgres(join(bin, 'createdb'), ['-h', '127.0.0.1', '-p', String(THROWAWAY_PORT), '-U', 'postgres', 'test']);
  return {
    url: `postgres://postgres@127.0.0.1:${THROWAWAY_PORT}/test`,
    stop: async () => {
      spawnSync('runuser', ['-u', 'postgres', '--', join(bin, 'pg_ctl'), '-D', data, '-m', 'fast', 'stop']);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function findPostgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort().reverse() : [];
  const found = versions.map((v) => join(root, v, 'bin')).find((d) => existsSync(join(d, 'initdb')));
  if (found === undefined)
    throw new Error('No PostgreSQL server binaries under /usr/lib/postgresql; install postgresql-15.');
  return found;
}
