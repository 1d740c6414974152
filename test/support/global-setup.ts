import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startPgbouncer } from './pgbouncer.js';
import { startThrowawayCluster } from './throwaway-cluster.js';

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
    const cluster = await startThrowawayCluster(THROWAWAY_PORT);
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
