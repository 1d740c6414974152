import { once } from 'node:events';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { CRON_DEFAULTS } from '@orreryjs/cron';
import { describe, expect, it } from 'vitest';
import { cronSettingsOf, resolveConfig } from '../src/config.js';
import {
  ConfigurationError,
  DatabaseError,
  DefaultRunner,
  type DefaultRunnerConfig,
  defineWorkflow,
  ManualClock,
  RUNNER_DEFAULTS,
  type TaskRunInfo,
} from '../src/index.js';
import { ADAPTERS, runnersPerTest, untilAborted, waitFor } from './support.js';

const signals = new Map<string, AbortSignal[]>();

const blocking = defineWorkflow({
  name: 'blocking',
  tasks: [
    {
      id: 'hold',
      run: async (ctx, info: TaskRunInfo) => {
        signals.set(info.executionId, [...(signals.get(info.executionId) ?? []), info.signal]);
        if (info.attempt === 1) await untilAborted(info.signal);
        ctx.set('finishedOnAttempt', info.attempt);
      },
    },
  ],
});
const quick = defineWorkflow({ name: 'quick', tasks: [{ id: 'only', run: (ctx) => void ctx.set('done', true) }] });

describe('configuration', () => {
  const twin = defineWorkflow({ name: 'quick', tasks: [{ id: 'other', run: () => {} }] });
  it.each<[string, DefaultRunnerConfig, RegExp]>([
    ['maxConcurrentTasks: 0', { maxConcurrentTasks: 0 }, /maxConcurrentTasks/],
    ['a fractional taskLeaseMs', { taskLeaseMs: 1.5 }, /taskLeaseMs/],
    ['a misspelt option', { pollInterval: 10 } as DefaultRunnerConfig, /"pollInterval" is not a DefaultRunner option/],
    ['an unknown database scheme', { database: 'mysql://x' }, /unknown scheme/],
    ['a non-boolean flag', { enableCronScheduling: 'yes' as never }, /enableCronScheduling/],
    ['a negative retention', { retention: { executionsMs: -1 } }, /retention\.executionsMs/],
    [
      'an executions retention within the recovery window',
      { retention: { executionsMs: 3_600_000 } },
      /retention\.executionsMs \(3600000\) must exceed cronMaxRecoveryAgeMs \+ cronLostThresholdMs \(86460000\)/,
    ],
    [
      'a ledger retention within the recovery window',
      { cronMaxRecoveryAgeMs: 600_000, retention: { cronLedgerMs: 660_000 } },
      /retention\.cronLedgerMs \(660000\) must exceed cronMaxRecoveryAgeMs \+ cronLostThresholdMs \(660000\)/,
    ],
    ['a bad schema name', { schema: 'Bad-Name' }, /Schema name/],
    ['two workflows of one name', { workflows: [quick, twin] }, /already registered/],
    ['a workflow not built by defineWorkflow', { workflows: [{ name: 'fake' } as never] }, /workflows\[0\]/],
    ['pool.max: 0', { pool: { max: 0 } }, /pool\.max/],
    ['a negative pool.connectionTimeoutMs', { pool: { connectionTimeoutMs: -5 } }, /pool\.connectionTimeoutMs/],
    ['an unknown pool option', { pool: { size: 3 } as never }, /pool\.size is not an option/],
    ['a non-ASCII applicationName', { applicationName: 'r\u00e9sum\u00e9' }, /applicationName/],
  ])('refuses %s with a ConfigurationError naming it', async (_label, config, message) => {
    const created = DefaultRunner.create({ database: 'sqlite::memory:', ...config });
    await expect(created).rejects.toBeInstanceOf(ConfigurationError);
    await expect(created).rejects.toThrow(message);
  });

  it('documents its defaults', () => {
    expect(RUNNER_DEFAULTS).toMatchObject({ maxConcurrentTasks: 16, taskLeaseMs: 30_000, pollIntervalMs: 250 });
  });

  it('names Postgres connections orrery:<runnerId> and uses the documented pool defaults', () => {
    const resolved = resolveConfig({ runnerId: 'worker-7' });
    expect(resolved.applicationName).toBe('orrery:worker-7');
    expect(resolved.pool).toEqual({
      max: 10,
      connectionTimeoutMs: 10_000,
      idleTimeoutMs: 30_000,
      statementTimeoutMs: undefined,
    });
    expect(RUNNER_DEFAULTS.pool).toEqual(resolved.pool);
    // Postgres keeps 63 bytes of printable ASCII: a long or non-ASCII runnerId still gives a name it keeps as is.
    expect(resolveConfig({ runnerId: `h\u00f4te-${'x'.repeat(80)}` }).applicationName).toBe(
      `orrery:h?te-${'x'.repeat(51)}`,
    );
  });

  it('fails create() with a DatabaseError naming host, port and timeout when the server never answers', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const { port } = silent.address() as AddressInfo;
    try {
      const created = DefaultRunner.create({
        database: `postgres://nobody@127.0.0.1:${port}/none`,
        pool: { connectionTimeoutMs: 250 },
      });
      await expect(created).rejects.toBeInstanceOf(DatabaseError);
      await expect(created).rejects.toThrow(new RegExp(`host 127\\.0\\.0\\.1, port ${port} .*250 ms`));
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it('hands the cron service exactly the cron defaults it documents', () => {
    expect(cronSettingsOf(resolveConfig({}))).toEqual(CRON_DEFAULTS);
  });
});

describe.each(ADAPTERS)('runner lifecycle on $name', (adapter) => {
  const perTest = runnersPerTest(adapter, () => ({ workflows: [blocking, quick], pollIntervalMs: 20 }));
  const { open } = perTest;

  it('emits pipeline and task events in order', async () => {
    const runner = await open();
    const events: string[] = [];
    for (const name of ['pipeline:created', 'task:started', 'task:completed', 'pipeline:completed'] as const) {
      runner.on(name, () => events.push(name));
    }
    await runner.start();
    await runner.execute('quick');
    expect(events).toEqual(['pipeline:created', 'task:started', 'task:completed', 'pipeline:completed']);
  });

  it('accepts executions before start() and runs them once started', async () => {
    const runner = await open();
    const execution = await runner.executeAsync('quick', { early: true });
    expect(await execution.status()).toBe('pending');
    await runner.start();
    expect((await execution.wait()).finalContext).toEqual({ early: true, done: true });
  });

  it('lets a runner that never started wait for a pipeline another runner finishes', async () => {
    const client = await open();
    const worker = await open();
    await worker.start();
    const result = await client.execute('quick');
    expect(result.status).toBe('completed');
  });

  it('gives unfinished tasks back at shutdown without counting a failure', async () => {
    const first = await open();
    const failed: unknown[] = [];
    first.on('task:failed', (event) => failed.push(event));
    await first.start();
    const execution = await first.executeAsync('blocking');
    await waitFor(() => signals.has(execution.id));
    await first.shutdown({ timeoutMs: 50 });
    expect(signals.get(execution.id)?.[0]?.aborted).toBe(true);
    expect(failed).toEqual([]);
    const second = await open();
    await second.start();
    await waitFor(async () => (await second.getExecutionStatus(execution.id)) === 'completed');
    const done = await second.getExecutionResult(execution.id);
    expect(done.tasks[0]).toMatchObject({ status: 'completed', attempts: 2 });
    expect(done.tasks[0]!.error).toBeUndefined();
    expect(done.finalContext).toEqual({ finishedOnAttempt: 2 });
  });

  it('aborts a task whose lease another runner took over, and keeps the successor outcome', async () => {
    const first = await open({ taskLeaseMs: 600 });
    await first.start();
    const execution = await first.executeAsync('blocking');
    await waitFor(() => signals.has(execution.id));
    // A runner whose clock is an hour ahead sees the lease as expired and takes the task over.
    const successor = await open({ clock: new ManualClock(new Date(Date.now() + 3_600_000)) });
    await successor.start();
    await waitFor(async () => (await successor.getExecutionStatus(execution.id)) === 'completed');
    await waitFor(() => signals.get(execution.id)?.[0]?.aborted === true);
    const result = await first.getExecutionResult(execution.id);
    expect(result.tasks[0]).toMatchObject({ status: 'completed', attempts: 2 });
    expect(result.finalContext).toEqual({ finishedOnAttempt: 2 });
  });

  it('heartbeats in the runners table while running and records a graceful stop', async () => {
    const runner = await open({ runnerId: 'heartbeat-test' });
    await runner.start();
    const storage = await perTest.db.storage();
    try {
      const [row] = await storage.runners.listRunners();
      expect(row).toMatchObject({
        id: 'heartbeat-test',
        pid: process.pid,
        workflows: ['blocking', 'quick'],
        stoppedAt: null,
      });
      await runner.shutdown();
      const [stopped] = await storage.runners.listRunners();
      expect(stopped?.stoppedAt).toBeInstanceOf(Date);
    } finally {
      await storage.close();
    }
  });

  it('starts and shuts down idempotently, and refuses work after shutdown', async () => {
    const runner = await open();
    await Promise.all([runner.start(), runner.start()]);
    await Promise.all([runner.shutdown(), runner.shutdown()]);
    expect(() => runner.register(quick)).toThrow(ConfigurationError);
    await expect(runner.executeAsync('quick')).rejects.toBeInstanceOf(ConfigurationError);
    await expect(runner.start()).rejects.toBeInstanceOf(ConfigurationError);
  });

  it('shuts down a runner that was never started', async () => {
    const runner = await open();
    await runner.shutdown();
    await expect(runner.executeAsync('quick')).rejects.toBeInstanceOf(ConfigurationError);
  });
});
