import { DefaultRunner } from '@orreryjs/runner';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { LIMIT, limitedWorkflow } from './fixtures/flow-control-workflow.js';
import { createRunLog, type RunRow } from './fixtures/run-log.js';
import { dropSchema, freshSchemaName, postgresUrl } from './support/postgres.js';
import { sleep, spawnFixture, stopWorker, until, type Worker } from './support/processes.js';

const CUSTOMERS = ['acme', 'globex', 'initech', 'umbrella'];
const PER_CUSTOMER = 60;
const RUNNERS = 3;
const KILLS = 3;

/**
 * The most pipelines of one customer whose recorded spans overlap at any instant. A pipeline's
 * span runs from its first attempt's start to its completed attempt's end: inside the time it
 * holds its group's slot, so this never exceeds what the database let run at once.
 */
function highestOverlap(rows: readonly RunRow[], customer: string): number {
  const spans = new Map<string, { from: number; to: number }>();
  for (const row of rows.filter((r) => r.label === customer)) {
    const span = spans.get(row.execution_id) ?? { from: Number.POSITIVE_INFINITY, to: Number.NEGATIVE_INFINITY };
    const at = row.at.getTime();
    if (row.event === 'start') span.from = Math.min(span.from, at);
    else span.to = Math.max(span.to, at);
    spans.set(row.execution_id, span);
  }
  // Ends sort before starts at the same instant: touching spans do not overlap.
  const edges = [...spans.values()]
    .flatMap((span) => [
      { at: span.from, delta: 1 },
      { at: span.to, delta: -1 },
    ])
    .sort((a, b) => a.at - b.at || a.delta - b.delta);
  let running = 0;
  let highest = 0;
  for (const edge of edges) {
    running += edge.delta;
    highest = Math.max(highest, running);
  }
  return highest;
}

describe('concurrency limits across three runner processes, with kill -9', () => {
  const workers: Worker[] = [];
  let submitter: DefaultRunner | undefined;
  let client: pg.Client | undefined;
  let schema: string | undefined;

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => stopWorker(worker, 'SIGKILL')));
    await submitter?.shutdown();
    await client?.end();
    if (schema !== undefined) await dropSchema(schema);
  });

  it('never runs more than the limit of one customer at once, reaches it, and completes every pipeline', {
    timeout: 240_000,
  }, async () => {
    schema = freshSchemaName();
    const env = { ORRERY_DATABASE: postgresUrl(), ORRERY_SCHEMA: schema };
    // Never started: it migrates the schema and writes the pipelines; the processes run them.
    submitter = await DefaultRunner.create({
      database: postgresUrl(),
      schema,
      workflows: [limitedWorkflow(async () => {})],
      enableCronScheduling: false,
    });
    client = new pg.Client({ connectionString: postgresUrl(), user: 'postgres' });
    await client.connect();
    await createRunLog(client, schema);
    let started = 0;
    const startWorker = async () => {
      started += 1;
      const worker = spawnFixture('flow-control-worker.ts', [`fc-${started}`], env);
      workers.push(worker);
      await worker.ready;
    };
    await Promise.all(Array.from({ length: RUNNERS }, startWorker));

    const executions = await submitter.executeAsyncMany(
      CUSTOMERS.flatMap((customer) =>
        Array.from({ length: PER_CUSTOMER }, () => ({ workflowName: 'limited', context: { customer } })),
      ),
    );
    // kill -9 at random instants while the pipelines run, a new process taking each one's place.
    for (let kill = 0; kill < KILLS; kill += 1) {
      await sleep(300 + Math.floor(Math.random() * 900));
      const victim = workers.splice(Math.floor(Math.random() * workers.length), 1)[0]!;
      await stopWorker(victim, 'SIGKILL');
      await startWorker();
    }
    const completed = async () =>
      (
        await client!.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${schema}".pipeline_executions WHERE status = 'completed'`,
        )
      ).rows[0]!.n;
    await until('every pipeline completed', completed, (n) => n === executions.length, 180_000);

    const { rows } = await client.query<RunRow>(
      `SELECT execution_id, label, event, attempt, at FROM "${schema}".run_log`,
    );
    const ended = new Set(rows.filter((row) => row.event === 'end').map((row) => row.execution_id));
    expect(ended.size).toBe(executions.length);
    // The first kill lands while every process is busy: some attempt started and never ended.
    const endedAttempts = new Set(rows.filter((r) => r.event === 'end').map((r) => `${r.execution_id}/${r.attempt}`));
    const interrupted = rows.filter((r) => r.event === 'start' && !endedAttempts.has(`${r.execution_id}/${r.attempt}`));
    expect(interrupted.length).toBeGreaterThan(0);
    expect(Object.fromEntries(CUSTOMERS.map((customer) => [customer, highestOverlap(rows, customer)]))).toEqual(
      Object.fromEntries(CUSTOMERS.map((customer) => [customer, LIMIT])),
    );
  });
});
