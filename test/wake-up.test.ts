import { randomBytes } from 'node:crypto';
import type { ClaimTasksRequest, Storage } from '@orreryjs/core';
import { DefaultRunner, defineWorkflow, OrreryClient } from '@orreryjs/runner';
import { afterEach, describe, expect, it } from 'vitest';
import { ADAPTERS, type TestDatabase, waitFor } from '../packages/runner/test/support.js';
import { connectionsNamed, terminateBackends } from './support/backends.js';
import { postgresUrl } from './support/postgres.js';
import { spawnFixture, stopWorker, type Worker } from './support/processes.js';

/*
 * Wake-up across processes on PostgreSQL (LISTEN/NOTIFY). Every process here polls every 60 s
 * (claims, cron ticks, waiters), and each test must finish within 15 s: only a notification,
 * committed with the work it announces, can make it. Sending none, or sending it before the
 * commit (the woken process then reads before the work is visible), fails these tests.
 */

const POLL_MS = 60_000;
/** Far below POLL_MS: reaching it means the poll, not a wake-up, would have been needed. */
const PROMPT_MS = 15_000;

/** `promise`, or a rejection naming `what` once PROMPT_MS have passed. */
function promptly<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: not within ${PROMPT_MS} ms (the poll is ${POLL_MS} ms)`)),
      PROMPT_MS,
    );
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** Backend pids of the connections named `applicationName`. */
async function backendsNamed(applicationName: string): Promise<number[]> {
  return (await connectionsNamed(postgresUrl(), applicationName)).map((connection) => connection.pid);
}

/** The last statement each connection named `applicationName` ran ('' for none). */
async function lastStatementsOf(applicationName: string): Promise<string[]> {
  return (await connectionsNamed(postgresUrl(), applicationName)).map((connection) => connection.query);
}

const postgres = ADAPTERS.find((adapter) => adapter.name === 'postgres')!;

describe('wake-up across processes on postgres', () => {
  const processes: Worker[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  let database: TestDatabase | undefined;

  afterEach(async () => {
    await Promise.all(processes.splice(0).map((worker) => stopWorker(worker, 'SIGKILL')));
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await database?.remove();
    database = undefined;
  });

  function env(): Record<string, string> {
    return { ORRERY_DATABASE: database!.config.database!, ORRERY_SCHEMA: database!.config.schema! };
  }

  /** A worker process (test/fixtures/wake-up-process.ts) running `ping`, polling every 60 s, once it is ready. */
  async function startWorkerProcess(prefix: string): Promise<Worker> {
    const worker = spawnFixture('wake-up-process.ts', ['worker', uniqueName(prefix)], env());
    processes.push(worker);
    await worker.ready;
    return worker;
  }

  /** An in-process worker running `ping`, polling every 60 s; `ran` lists the pipelines it ran. */
  async function startWorker(options: { applicationName?: string; listen?: boolean; pollIntervalMs?: number } = {}) {
    const ran: string[] = [];
    const waiters = new Set<() => void>();
    const ping = defineWorkflow({
      name: 'ping',
      tasks: [
        {
          id: 'pong',
          run: (_ctx, info) => {
            ran.push(info.executionId);
            for (const wake of waiters) wake();
          },
        },
      ],
    });
    const runner = await DefaultRunner.create({
      ...database!.config,
      workflows: [ping],
      pollIntervalMs: options.pollIntervalMs ?? POLL_MS,
      cronPollIntervalMs: POLL_MS,
      ...(options.applicationName !== undefined && { applicationName: options.applicationName }),
      ...(options.listen !== undefined && { listen: options.listen }),
    });
    closers.push(() => runner.shutdown({ timeoutMs: 1_000 }));
    await runner.start();
    /** Resolves once pipeline `id` ran here. */
    const hasRun = (id: string) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (!ran.includes(id)) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      });
    return { runner, ran, hasRun };
  }

  /** Starts one `ping` pipeline from a client process with no task code; resolves with its id. */
  async function startFromAnotherProcess(): Promise<string> {
    const starter = spawnFixture('wake-up-process.ts', ['start'], env());
    processes.push(starter);
    const { code } = await starter.exited;
    expect(code, starter.stderr()).toBe(0);
    const started = starter.messages.find((message) => typeof message.started === 'string');
    return started!.started as string;
  }

  it('claims at once a pipeline that a client process committed, while polling every 60 s', {
    timeout: 60_000,
  }, async () => {
    database = postgres.open();
    const worker = await startWorker();
    const id = await startFromAnotherProcess();
    await promptly('the worker ran the pipeline', worker.hasRun(id));
    expect(worker.ran).toEqual([id]);
  });

  it('leaves the wake-ups of workflows it does not run to the runners that do, and answers its own at once', {
    timeout: 60_000,
  }, async () => {
    database = postgres.open();
    const worker = await startWorker();
    const elsewhere = defineWorkflow({ name: 'elsewhere: run by another runner', tasks: [{ id: 't', run: () => {} }] });
    const other = await DefaultRunner.create({
      ...database.config,
      workflows: [elsewhere],
      pollIntervalMs: POLL_MS,
      cronPollIntervalMs: POLL_MS,
    });
    closers.push(() => other.shutdown({ timeoutMs: 1_000 }));
    await other.start();
    const client = await OrreryClient.create({ ...database.config, pollIntervalMs: POLL_MS });
    closers.push(() => client.close());
    // Once it has run a pipeline, every claim of the worker's own loop is counted.
    const first = await client.executeAsync('ping', {});
    await promptly('the worker ran the first pipeline', worker.hasRun(first.id));
    const { executions } = (worker.runner as unknown as { storage: Storage }).storage;
    const claim = executions.claimTasks.bind(executions);
    let claims = 0;
    executions.claimTasks = (request: ClaimTasksRequest) => {
      claims += 1;
      return claim(request);
    };
    for (let i = 0; i < 5; i += 1) {
      const result = await promptly('the other runner ran its pipeline', client.execute(elsewhere.name, {}));
      expect(result.status).toBe('completed');
    }
    expect(claims).toBe(0);
    const mine = await client.executeAsync('ping', {});
    await promptly('the worker ran its pipeline', worker.hasRun(mine.id));
    expect(claims).toBeGreaterThan(0);
  });

  it('ends a client execute() at once when a worker process finishes the pipeline, both polling every 60 s', {
    timeout: 60_000,
  }, async () => {
    database = postgres.open();
    const worker = await startWorkerProcess('wake-worker');
    const client = await OrreryClient.create({ ...database.config, pollIntervalMs: POLL_MS });
    closers.push(() => client.close());

    const result = await promptly('execute() resolved', client.execute('ping', {}));
    expect(result.status).toBe('completed');
    expect(result.finalContext.pong).toBe(worker.child.pid);

    // wait() on a pipeline that finished before the wait began reads it at once.
    const execution = await client.executeAsync('ping', {});
    await waitFor(async () => (await client.getExecutionStatus(execution.id)) === 'completed', PROMPT_MS);
    expect((await promptly('wait() after the end resolved', execution.wait())).status).toBe('completed');
  });

  // A declarative sync writes its schedules in one transaction of its own: the same triggers notify.
  it.each([
    ['added', '* * * * * *'],
    ['synced', '@every 1s'],
  ] as const)(
    'fires a schedule that a client %s in a worker process whose cron tick polls every 60 s',
    {
      timeout: 60_000,
    },
    async (how, cronExpression) => {
      database = postgres.open();
      await startWorkerProcess('wake-cron');
      const client = await OrreryClient.create({ ...database.config, listen: false });
      closers.push(() => client.close());

      const input = { name: 'every-second', workflowName: 'ping', cronExpression };
      if (how === 'synced') expect((await client.syncCronSchedules([input])).created).toEqual(['every-second']);
      const schedule = how === 'added' ? await client.addCronSchedule(input) : await client.getCronSchedule(input.name);
      const fired = waitFor(async () => {
        const history = await client.getCronExecutionHistory(schedule.id);
        return history.some((row) => row.pipelineExecutionId !== null);
      }, PROMPT_MS + 1_000);
      await promptly('the schedule fired', fired);
    },
  );

  it('re-establishes a killed LISTEN connection, loses nothing while it is down, and wakes up again', {
    timeout: 60_000,
  }, async () => {
    database = postgres.open();
    const applicationName = uniqueName('wake-kill');
    const worker = await startWorker({ applicationName });
    const starter = await OrreryClient.create({ ...database.config, listen: false });
    closers.push(() => starter.close());
    const listenName = `${applicationName}:listen`;
    const [before] = await backendsNamed(listenName);
    expect(before).toBeDefined();

    expect(await terminateBackends(postgresUrl(), listenName)).toBe(1);
    // Committed while the connection is down (or reconnecting): the wake-up after the reconnect finds it.
    const whileDown = await starter.executeAsync('ping', {});
    await promptly('the pipeline committed while down ran', worker.hasRun(whileDown.id));

    await waitFor(async () => {
      const pids = await backendsNamed(listenName);
      return pids.length === 1 && pids[0] !== before;
    }, PROMPT_MS);
    const after = await starter.executeAsync('ping', {});
    await promptly('the pipeline committed after the reconnect ran', worker.hasRun(after.id));
    expect(worker.ran).toEqual([whileDown.id, after.id]);
  });

  it('LISTENs only while something in the process needs it: a runner from start(), a client from its first wait', {
    timeout: 60_000,
  }, async () => {
    database = postgres.open();
    await startWorkerProcess('wake-worker');
    const clientName = uniqueName('lazy-client');
    const client = await OrreryClient.create({
      ...database.config,
      applicationName: clientName,
      pollIntervalMs: POLL_MS,
    });
    closers.push(() => client.close());
    const runnerName = uniqueName('lazy-runner');
    const ping = defineWorkflow({ name: 'ping', tasks: [{ id: 'pong', run: () => {} }] });
    const runner = await DefaultRunner.create({
      ...database.config,
      applicationName: runnerName,
      workflows: [ping],
      pollIntervalMs: POLL_MS,
      cronPollIntervalMs: POLL_MS,
    });
    closers.push(() => runner.shutdown({ timeoutMs: 1_000 }));
    const listen = `LISTEN "orrery.${database.config.schema}"`;

    // Both hold their connection (a bad listen URL still fails at create()), and neither LISTENs while it only starts work.
    await client.executeAsync('ping', {});
    expect(await lastStatementsOf(`${clientName}:listen`)).toEqual(['']);
    expect(await lastStatementsOf(`${runnerName}:listen`)).toEqual(['']);

    // The first wait LISTENs, and the worker process's finish wakes it (both poll every 60 s).
    const result = await promptly('execute() resolved', client.execute('ping', {}));
    expect(result.status).toBe('completed');
    expect(await lastStatementsOf(`${clientName}:listen`)).toEqual([listen]);

    await runner.start();
    await waitFor(async () => (await lastStatementsOf(`${runnerName}:listen`))[0] === listen, PROMPT_MS);
  });

  it('works by polling alone with listen: false, and opens no LISTEN connection', { timeout: 60_000 }, async () => {
    database = postgres.open();
    const applicationName = uniqueName('no-listen');
    const worker = await startWorker({ applicationName, listen: false, pollIntervalMs: 100 });
    const client = await OrreryClient.create({ ...database.config, listen: false, pollIntervalMs: 100 });
    closers.push(() => client.close());

    const result = await client.execute('ping', {}, { timeoutMs: 30_000 });
    expect(result.status).toBe('completed');
    expect(worker.ran).toEqual([result.executionId]);
    expect(await backendsNamed(`${applicationName}:listen`)).toEqual([]);
    expect((await backendsNamed(applicationName)).length).toBeGreaterThan(0);
  });

  it('refuses a listen option that is neither a boolean nor { database: postgres URL }', async () => {
    await expect(OrreryClient.create({ listen: { database: 'sqlite:x.db' } })).rejects.toThrow(
      /listen.database must be a postgres:\/\/ or postgresql:\/\/ URL/,
    );
    await expect(DefaultRunner.create({ listen: 'yes' as never })).rejects.toThrow(/listen must be true, false/);
  });
});
