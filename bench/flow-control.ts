/**
 * Flow control on PostgreSQL (issue 27's figures that ../shared/peers does not measure).
 *
 *   npm run bench:flow-control                  # 100,000 queued pipelines (BENCH_SCALE scales them), 5,000 rate-limited tasks
 *   BENCH_SCALE=0.1 npm run bench:flow-control
 *
 * 1. Claim cost with work held back: the median time of an empty claim (`claimTasks`, limit 16)
 *    with Q pipelines queued behind a full concurrency group, against the same with none, and
 *    the plan of the claim's ready walk (EXPLAIN ANALYZE). Queued pipelines' tasks are not
 *    `ready` until admitted, so the claim should not see them at all.
 * 2. A rate limit of 1,000 starts/s over two runners: N tasks of one bucket; the most starts in
 *    any 1-s window (≤ 1,000: the limit) and the rate reached over whole windows from the first
 *    start, as a share of it.
 *
 * PostgreSQL comes from TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test.
 * Results are printed and written to bench/results/flow-control-<date>.json.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { Storage } from '@orreryjs/core';
import { openPostgresStorage } from '@orreryjs/postgres-adapter';
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';
import pg from 'pg';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const QUEUED = Math.ceil(100_000 * SCALE);
const RATED = 5_000;
const RATE = { limit: 1_000, periodMs: 1_000 };
const CLAIMS = 300;
const CHUNK = 1_000;

const admin = new pg.Client({ connectionString: POSTGRES_URL, user: 'postgres' });
await admin.connect();
const schemas: string[] = [];
const freshSchema = () => {
  const schema = `orrery_flow_${randomBytes(4).toString('hex')}`;
  schemas.push(schema);
  return schema;
};

function progress(what: string): void {
  process.stdout.write(`\r${what}`.padEnd(70));
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const limited = defineWorkflow({
  name: 'limited',
  concurrency: { key: 'k', limit: 1 },
  tasks: [{ id: 't', run: () => {} }],
});

/** The median time of an empty claim on a schema holding `queued` pipelines behind one full group. */
async function claimTime(queued: number): Promise<{ medianMs: number; plan: string }> {
  const schema = freshSchema();
  const writer = await DefaultRunner.create({
    database: POSTGRES_URL,
    schema,
    workflows: [limited],
    enableCronScheduling: false,
  });
  for (let first = 0; first < queued; first += CHUNK) {
    await writer.executeAsyncMany(
      Array.from({ length: Math.min(CHUNK, queued - first) }, () => ({
        workflowName: 'limited',
        context: { k: 'hot' },
      })),
    );
    progress(`claim cost: ${Math.min(first + CHUNK, queued)}/${queued} pipelines queued`);
  }
  await writer.shutdown();
  await admin.query(`ANALYZE "${schema}".task_executions`);
  const storage: Storage = await openPostgresStorage({ connectionString: POSTGRES_URL, schema });
  try {
    const registered = [{ workflowName: 'limited', taskIds: ['t'] }];
    // The one admitted pipeline's task is claimed first, so that every measured claim finds nothing.
    await storage.executions.claimTasks({
      runnerId: 'bench',
      registered,
      limit: 16,
      leaseMs: 600_000,
      now: new Date(),
    });
    const times: number[] = [];
    for (let n = 0; n < CLAIMS; n += 1) {
      const from = performance.now();
      await storage.executions.claimTasks({
        runnerId: 'bench',
        registered,
        limit: 16,
        leaseMs: 600_000,
        now: new Date(),
      });
      times.push(performance.now() - from);
    }
    const { rows } = await admin.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT t.task_id FROM "${schema}".task_executions t
       WHERE coalesce(t.status = 'ready' AND t.priority = 0, false) AND t.available_at <= now()
       ORDER BY t.available_at LIMIT 16 FOR NO KEY UPDATE SKIP LOCKED`,
    );
    return { medianMs: median(times), plan: rows.map((row) => row['QUERY PLAN']).join('\n') };
  } finally {
    await storage.close();
  }
}

/** N tasks of one bucket (RATE) over two runners: the most starts in any window, and the rate reached. */
async function rateReached(): Promise<{ mostPerWindow: number; reachedPerS: number; share: number }> {
  const schema = freshSchema();
  const starts: number[] = [];
  const rated = defineWorkflow({
    name: 'rated',
    tasks: [{ id: 'call', rateLimit: { name: 'api', ...RATE }, run: () => void starts.push(Date.now()) }],
  });
  const runners = await Promise.all(
    [1, 2].map((n) =>
      DefaultRunner.create({
        database: POSTGRES_URL,
        schema,
        workflows: [rated],
        runnerId: `rated-${n}`,
        maxConcurrentTasks: 50,
        pollIntervalMs: 50,
        enableCronScheduling: false,
      }),
    ),
  );
  try {
    for (let first = 0; first < RATED; first += CHUNK) {
      await runners[0]!.executeAsyncMany(
        Array.from({ length: Math.min(CHUNK, RATED - first) }, () => ({ workflowName: 'rated' })),
      );
    }
    await Promise.all(runners.map((runner) => runner.start()));
    while (starts.length < RATED) {
      progress(`rate limit: ${starts.length}/${RATED} tasks started`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    starts.sort((a, b) => a - b);
    let most = 0;
    for (let first = 0, last = 0; last < starts.length; last += 1) {
      while (starts[last]! - starts[first]! >= RATE.periodMs) first += 1;
      most = Math.max(most, last - first + 1);
    }
    // Starts come in bursts as windows open: the rate is read over whole windows from the first start.
    const windows = Math.floor((starts.at(-1)! - starts[0]!) / RATE.periodMs);
    const end = starts[0]! + windows * RATE.periodMs;
    const reachedPerS = (starts.filter((at) => at < end).length * 1000) / (windows * RATE.periodMs);
    return { mostPerWindow: most, reachedPerS, share: reachedPerS / ((RATE.limit * 1000) / RATE.periodMs) };
  } finally {
    await Promise.all(runners.map((runner) => runner.shutdown({ timeoutMs: 1_000 })));
  }
}

try {
  const none = await claimTime(0);
  const held = await claimTime(QUEUED);
  process.stdout.write('\n');
  const rate = await rateReached();
  process.stdout.write('\n');
  const result = {
    date: new Date().toISOString(),
    load: (await import('node:os')).loadavg()[0],
    claimEmptyMedianMs: {
      queued0: none.medianMs,
      [`queued${QUEUED}`]: held.medianMs,
      ratio: held.medianMs / none.medianMs,
    },
    claimPlanWithQueued: held.plan,
    rateLimit: { ...RATE, runners: 2, tasks: RATED, ...rate },
  };
  console.log(JSON.stringify(result, null, 2));
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(
    new URL(`./results/flow-control-${result.date.slice(0, 10)}.json`, import.meta.url),
    `${JSON.stringify(result, null, 2)}\n`,
  );
} finally {
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}
