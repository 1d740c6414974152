/**
 * WAL written per processed job on PostgreSQL, by record type: N one-task pipelines are started
 * first (the backlog), then a CHECKPOINT, then one runner drains the backlog; pg_walinspect
 * reports the WAL between the checkpoint and the last completion.
 *
 *   npm run bench:wal                 # 5,000 jobs
 *   BENCH_SCALE=0.2 npm run bench:wal
 *
 * It is the figure that `../shared/peers/` calls "WAL bytes/job, processing-only", split by
 * record type (heap updates, HOT updates, row locks, B-tree inserts, full-page images), so a
 * change to the schema or to the claim and finish statements can be weighed on its own.
 * PostgreSQL comes from TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test; the
 * role must be allowed to CHECKPOINT and to create the pg_walinspect extension (a superuser).
 * The WAL range covers the whole server: run it while nothing else writes. Results are printed
 * and written to bench/results/wal-<date>.json.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { DefaultRunner, defineWorkflow, type PipelineExecution } from '@orreryjs/runner';
import pg from 'pg';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const JOBS = Math.ceil(5_000 * SCALE);
/** As in ../shared/peers/: ten tasks in flight, the backlog started in chunks of 100. */
const CONCURRENCY = 10;
const CHUNK = 100;

const noop = defineWorkflow({ name: 'noop', tasks: [{ id: 'only', run: () => {} }] });
const schema = `orrery_wal_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: POSTGRES_URL });
await admin.connect();
/** The flushed WAL position (pg_walinspect reads no further than that). */
const lsn = async () =>
  (await admin.query<{ lsn: string }>('SELECT pg_current_wal_flush_lsn()::text AS lsn')).rows[0]!.lsn;

/** Where pg_walinspect is: the database's own copy, else one created in the bench's schema (dropped with it). */
async function walInspectSchema(): Promise<string> {
  const { rows } = await admin.query<{ schema: string }>(
    "SELECT extnamespace::regnamespace::text AS schema FROM pg_extension WHERE extname = 'pg_walinspect'",
  );
  if (rows[0] !== undefined) return rows[0].schema;
  await admin.query(`CREATE EXTENSION pg_walinspect SCHEMA "${schema}"`);
  return `"${schema}"`;
}

interface RecordType {
  type: string;
  count: number;
  recordBytes: number;
  fullPageImageBytes: number;
}

const runner = await DefaultRunner.create({
  database: POSTGRES_URL,
  schema,
  maxConcurrentTasks: CONCURRENCY,
  enableCronScheduling: false,
  workflows: [noop],
});
let drained: { seconds: number; bytes: number; types: RecordType[] };
try {
  const executions: PipelineExecution[] = [];
  for (let i = 0; i < JOBS; i += CHUNK) {
    const size = Math.min(CHUNK, JOBS - i);
    executions.push(
      ...(await runner.executeAsyncMany(
        Array.from({ length: size }, (_, j) => ({ workflowName: 'noop', context: { i: i + j } })),
      )),
    );
    process.stdout.write(`\rbacklog: ${executions.length} / ${JOBS} pipelines started`);
  }
  const walinspect = await walInspectSchema();
  await admin.query('CHECKPOINT');
  const start = await lsn();
  const startMs = performance.now();
  await runner.start();
  let done = 0;
  await Promise.all(
    executions.map(async (execution) => {
      const result = await execution.wait();
      if (result.status !== 'completed') throw new Error(`pipeline ${execution.id} ended ${result.status}`);
      done += 1;
      if (done % 500 === 0) process.stdout.write(`\rdraining: ${done} / ${JOBS} completed          `);
    }),
  );
  const seconds = (performance.now() - startMs) / 1000;
  const end = await lsn();
  const { rows } = await admin.query<{
    type: string;
    count: string;
    record_size: string;
    fpi_size: string;
  }>(
    `SELECT "resource_manager/record_type" AS type, count, record_size, fpi_size
       FROM ${walinspect}.pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true) WHERE count > 0 ORDER BY combined_size DESC`,
    [start, end],
  );
  const bytes = Number((await admin.query('SELECT pg_wal_lsn_diff($1, $2) AS b', [end, start])).rows[0].b);
  drained = {
    seconds,
    bytes,
    types: rows.map((row) => ({
      type: row.type,
      count: Number(row.count),
      recordBytes: Number(row.record_size),
      fullPageImageBytes: Number(row.fpi_size),
    })),
  };
} finally {
  await runner.shutdown();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}

const perJob = (value: number) => (value / JOBS).toFixed(value / JOBS < 10 ? 2 : 0);
console.log(
  `\n\n${JOBS} jobs drained in ${drained.seconds.toFixed(2)} s (${(JOBS / drained.seconds).toFixed(0)} jobs/s): ` +
    `${perJob(drained.bytes)} WAL bytes per job\n`,
);
console.log('record type                   per job   record B/job   full-page B/job');
for (const t of drained.types.filter((t) => t.count >= JOBS / 100)) {
  console.log(
    [
      t.type.padEnd(28),
      perJob(t.count).padStart(8),
      perJob(t.recordBytes).padStart(14),
      perJob(t.fullPageImageBytes).padStart(17),
    ].join(' '),
  );
}

const resultsDir = new URL('./results/', import.meta.url);
mkdirSync(resultsDir, { recursive: true });
const file = new URL(`wal-${new Date().toISOString().slice(0, 10)}.json`, resultsDir);
writeFileSync(
  file,
  `${JSON.stringify({ date: new Date().toISOString(), jobs: JOBS, concurrency: CONCURRENCY, ...drained }, null, 2)}\n`,
);
console.log(`\nwrote ${file.pathname}`);
