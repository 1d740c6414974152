import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

/** The URL global-setup found or started. */
export function postgresUrl(): string {
  return inject('postgresUrl');
}

/** A schema name no other test run uses: `orrery_t_<hex>`. */
export function freshSchemaName(): string {
  return `orrery_t_${randomBytes(6).toString('hex')}`;
}

/** Drops a test schema and everything in it. */
export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** PgBouncer (pool_mode = transaction) in front of the test server, as global-setup started it. */
export function pgbouncerUrl(): string {
  return inject('pgbouncerUrl');
}
