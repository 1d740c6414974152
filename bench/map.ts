/**
 * Map tasks on PostgreSQL: a map of N no-op items against N one-task pipelines, on the same
 * runner settings in one run (issue 23's figure: the map at ≥ 80 % of the pipelines' rate).
 *
 *   npm run bench:map                   # N = 10,000, 3 rounds alternated
 *   BENCH_SCALE=0.1 npm run bench:map
 *
 * - pipelines: N one-task pipelines written with executeAsyncMany (chunks of 500), then a fresh
 *   runner started: from its start to the last pipeline completed (processing), and from the
 *   first write to it (end to end).
 * - map: one pipeline whose task maps over N items (no-op instances), on a fresh runner
 *   already started: from executeAsync to the pipeline completed (the map computed, its
 *   instances inserted, claimed, run and gathered).
 * Each round runs on a fresh schema; both scenarios alternate, BENCH_ROUNDS times (default 3).
 *
 * PostgreSQL comes from TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test.
 * Results are printed and written to bench/results/map-<date>.json.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';
import pg from 'pg';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const N = Math.ceil(10_000 * SCALE);
const CHUNK = 500;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** The runner's settings in both scenarios: its defaults but the cron loop. */
const RUNNER = { enableCronScheduling: false, maxConcurrentTasks: 10 } as const;

const single = defineWorkflow({ name: 'single', tasks: [{ id: 'noop', run: () => {} }] });
const fan = defineWorkflow({
  name: 'fan',
  tasks: [{ id: 'each', map: (ctx) => Array.from({ length: Number(ctx.get('n')) }, (_, i) => i), run: () => {} }],
});

function progress(what: string): void {
  process.stdout.write(`\r${what}`.padEnd(70));
}

async function withSchema<T>(run: (schema: string) => Promise<T>): Promise<T> {
  const schema = `orrery_map_${randomBytes(4).toString('hex')}`;
  try {
    return await run(schema);
  } finally {
    const admin = new pg.Client({ connectionString: POSTGRES_URL, user: 'postgres' });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}

/** N one-task pipelines: written, then drained by a fresh runner. */
function pipelines(round: number) {
  return withSchema(async (schema) => {
    const writer = await DefaultRunner.create({ database: POSTGRES_URL, schema, ...RUNNER, workflows: [single] });
    const firstWrite = performance.now();
    const executions = [];
    for (let first = 0; first < N; first += CHUNK) {
      const chunk = Array.from({ length: Math.min(CHUNK, N - first) }, () => ({ workflowName: 'single' }));
      executions.push(...(await writer.executeAsyncMany(chunk)));
      progress(`round ${round} pipelines: ${executions.length}/${N} written`);
    }
    const written = performance.now();
    await writer.start();
    let done = 0;
    await Promise.all(
      executions.map(async (execution) => {
        await execution.wait({ timeoutMs: 600_000 });
        done += 1;
        if (done % 500 === 0) progress(`round ${round} pipelines: ${done}/${N} completed`);
      }),
    );
    const end = performance.now();
    await writer.shutdown({ timeoutMs: 1_000 });
    return { processingMs: end - written, endToEndMs: end - firstWrite };
  });
}

/** One pipeline mapping over N items. */
function map(round: number) {
  return withSchema(async (schema) => {
    const runner = await DefaultRunner.create({ database: POSTGRES_URL, schema, ...RUNNER, workflows: [fan] });
    await runner.start();
    progress(`round ${round} map: ${N} items running`);
    const from = performance.now();
    const result = await (await runner.executeAsync('fan', { n: N })).wait({ timeoutMs: 600_000 });
    const endToEndMs = performance.now() - from;
    if (result.status !== 'completed' || (result.finalContext.each as unknown[]).length !== N) {
      throw new Error(`the map did not complete: ${result.status}`);
    }
    await runner.shutdown({ timeoutMs: 1_000 });
    return { endToEndMs };
  });
}

const rounds = [];
for (let round = 1; round <= ROUNDS; round += 1) {
  const ofPipelines = await pipelines(round);
  const ofMap = await map(round);
  rounds.push({
    round,
    pipelinesPerS: { processing: (N / ofPipelines.processingMs) * 1000, endToEnd: (N / ofPipelines.endToEndMs) * 1000 },
    mapItemsPerS: (N / ofMap.endToEndMs) * 1000,
  });
}
process.stdout.write('\n');
const result = {
  date: new Date().toISOString(),
  n: N,
  rounds: rounds.map((r) => ({
    ...r,
    mapToPipelinesProcessing: r.mapItemsPerS / r.pipelinesPerS.processing,
    mapToPipelinesEndToEnd: r.mapItemsPerS / r.pipelinesPerS.endToEnd,
  })),
};
console.log(JSON.stringify(result, null, 2));
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(
  new URL(`./results/map-${result.date.slice(0, 10)}.json`, import.meta.url),
  `${JSON.stringify(result, null, 2)}\n`,
);
