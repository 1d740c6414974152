/**
 * A host whose clock is off manages schedules and starts pipelines before start() (as the CLI
 * and admin scripts do): everything it writes must follow the database's clock, measured when
 * the runner is created. The admin runs as a real process with `Date` shifted by a preloaded
 * module; this process reads the database's clock and claims as a runner with a correct clock.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { openPostgresStorage } from '@orreryjs/postgres-adapter';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName, postgresUrl } from './support/postgres.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** Runs clock-skew-admin.ts with its clock shifted by `skewMs`; resolves with its JSON lines once it exited 0. */
async function runSkewedAdmin(skewMs: number, schema: string): Promise<Record<string, unknown>> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', fixture('clock-skew.ts'), '--conditions=source', fixture('clock-skew-admin.ts')],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        ORRERY_DATABASE: postgresUrl(),
        ORRERY_SCHEMA: schema,
        ORRERY_TEST_CLOCK_SKEW_MS: String(skewMs),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += String(chunk);
  });
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const [code] = await once(child, 'close');
  if (code !== 0) throw new Error(`clock-skew-admin exited with ${code}: ${stderr}`);
  const lines = stdout.split('\n').filter((line) => line.startsWith('{'));
  return Object.assign({}, ...lines.map((line) => JSON.parse(line) as Record<string, unknown>));
}

async function databaseNow(): Promise<Date> {
  const client = new pg.Client({ connectionString: postgresUrl(), user: 'postgres' });
  await client.connect();
  try {
    const { rows } = await client.query<{ now: Date }>('SELECT clock_timestamp() AS now');
    return rows[0]!.now;
  } finally {
    await client.end();
  }
}

const schemas: string[] = [];
afterEach(async () => {
  await Promise.all(schemas.splice(0).map((schema) => dropSchema(schema)));
});

describe('a runner on a host with a skewed clock, before start(), on PostgreSQL', () => {
  it.each([
    ['120 s fast', 120_000],
    ['300 s slow', -300_000],
  ])('follows the database clock when its host is %s', async (_label, skewMs) => {
    const schema = freshSchemaName();
    schemas.push(schema);
    const before = await databaseNow();
    const report = await runSkewedAdmin(skewMs, schema);
    const after = await databaseNow();
    expect(report.done).toBe(true);

    // The first slot strictly after the database's now: never a slot long past, nor minutes ahead.
    const nextRunAt = new Date(report.nextRunAt as string).getTime();
    expect(nextRunAt).toBeGreaterThan(before.getTime() - 1_000);
    expect(nextRunAt).toBeLessThanOrEqual(after.getTime() + 11_000);

    // The triggered occurrence's pipeline and the executeAsync one are claimable now by a correct clock.
    const storage = await openPostgresStorage({ connectionString: postgresUrl(), schema });
    try {
      const claimed = await storage.executions.claimTasks({
        runnerId: 'correct-clock',
        registered: [{ workflowName: 'skewed', taskIds: ['only'] }],
        limit: 100,
        leaseMs: 60_000,
        now: await databaseNow(),
      });
      const pipelines = claimed.map((task) => task.pipeline.id);
      expect(pipelines).toContain(report.triggered);
      expect(pipelines).toContain(report.direct);
    } finally {
      await storage.close();
    }

    // A range ending in the database's future is refused, one ending in its past is accepted, whatever the host says.
    if (skewMs > 0) expect(report).toMatchObject({ backfillError: 'VALIDATION' });
    else expect(report).toMatchObject({ backfill: { created: 3, existing: 0 } });
  });
});
