import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  DefaultRunner,
  defineWorkflow,
  PipelineTimeoutError,
  ValidationError,
} from '../src/index.js';
import { ADAPTERS, gate, type TestDatabase, waitFor } from './support.js';

/** Node's warning for a setTimeout delay past 2³¹ − 1 ms, which it then runs after 1 ms instead. */
let overflowWarnings = 0;
const onWarning = (warning: Error) => {
  if (warning.name === 'TimeoutOverflowWarning') overflowWarnings += 1;
};

/** A real pause: long enough for a timer that wrongly fires after 1 ms to have fired. */
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const run50ms = async () => pause(50);
const longTimeout = defineWorkflow({ name: 'long-timeout', tasks: [{ id: 't', timeoutMs: 2 ** 31, run: run50ms }] });
const noTimeout = defineWorkflow({
  name: 'no-timeout',
  tasks: [{ id: 't', timeoutMs: Number.POSITIVE_INFINITY, run: run50ms }],
});
const defaultTimeout = defineWorkflow({ name: 'default-timeout', tasks: [{ id: 't', run: run50ms }] });
const nulThrower = defineWorkflow({
  name: 'nul-thrower',
  tasks: [{ id: 't', retry: { maxAttempts: 1 }, run: () => Promise.reject(new Error('a\u0000b')) }],
});
const nulWriter = defineWorkflow({
  name: 'nul-writer',
  tasks: [{ id: 't', run: (ctx) => void ctx.set('k', 'a\u0000b') }],
});
const quick = defineWorkflow({ name: 'quick', tasks: [{ id: 'only', run: (ctx) => void ctx.set('done', true) }] });
/** Registered only by the runner under test, so that it finishes the pipeline itself. */
const solo = defineWorkflow({ name: 'solo', tasks: [{ id: 'only', run: () => {} }] });
let release = gate();
const gated = defineWorkflow({
  name: 'gated',
  tasks: [
    {
      id: 'wait',
      run: async (ctx, info) => {
        await release.promise;
        ctx.set('abortedBeforeRelease', info.signal.aborted);
      },
    },
  ],
});
/** Registered only by the runner that shuts down, so that it is the one running the task. */
const draining = defineWorkflow({ name: 'draining', tasks: gated.tasks.map((task) => ({ ...task })) });
const ALL = [longTimeout, noTimeout, defaultTimeout, nulThrower, nulWriter, quick, gated];

beforeAll(() => {
  process.on('warning', onWarning);
});
afterAll(() => {
  process.off('warning', onWarning);
});

describe.each(ADAPTERS)('input limits on $name', (adapter) => {
  let db: TestDatabase;
  let runner: DefaultRunner;
  const extra: DefaultRunner[] = [];

  beforeAll(async () => {
    db = adapter.open();
    runner = await DefaultRunner.create({
      ...db.config,
      workflows: ALL,
      pollIntervalMs: 20,
      taskTimeoutMs: 30 * 86_400_000,
    });
    await runner.start();
  });
  afterEach(async () => {
    release.open();
    await Promise.all(extra.splice(0).map((r) => r.shutdown({ timeoutMs: 1000 })));
  });
  afterAll(async () => {
    release.open();
    await runner?.shutdown({ timeoutMs: 1000 });
    await db?.remove();
  });

  describe('durations of 2³¹ ms or more wait instead of firing at once', () => {
    it('runs a task with timeoutMs 2 ** 31, Infinity, or a 30-day taskTimeoutMs to completion', async () => {
      overflowWarnings = 0;
      for (const name of ['long-timeout', 'no-timeout', 'default-timeout']) {
        const result = await runner.execute(name);
        expect([name, result.status, result.tasks[0]?.error]).toEqual([name, 'completed', undefined]);
      }
      expect(overflowWarnings).toBe(0);
    });

    it('waits in execute() and wait() with timeoutMs 2 ** 31 until the pipeline ends', async () => {
      overflowWarnings = 0;
      const result = await runner.execute('long-timeout', {}, { timeoutMs: 2 ** 31 });
      expect(result.status).toBe('completed');
      const execution = await runner.executeAsync('long-timeout');
      await expect(execution.wait({ timeoutMs: 2 ** 31 })).resolves.toMatchObject({ status: 'completed' });
      expect(overflowWarnings).toBe(0);
    });

    it('drains running tasks for a shutdown timeoutMs of 2 ** 31 instead of aborting them', async () => {
      release = gate();
      const other = await DefaultRunner.create({ ...db.config, workflows: [draining], pollIntervalMs: 20 });
      extra.push(other);
      await other.start();
      const execution = await other.executeAsync('draining');
      await waitFor(async () => (await runner.getExecutionResult(execution.id)).tasks[0]?.status === 'running');
      overflowWarnings = 0;
      const stopped = other.shutdown({ timeoutMs: 2 ** 31 });
      await pause(100);
      release.open();
      await stopped;
      const result = await runner.getExecutionResult(execution.id);
      expect(result.status).toBe('completed');
      expect(result.finalContext).toEqual({ abortedBeforeRelease: false });
      expect(overflowWarnings).toBe(0);
    });

    it('does not spin with pollIntervalMs 2 ** 31, and still runs local work at once', async () => {
      overflowWarnings = 0;
      const other = await DefaultRunner.create({
        ...db.config,
        workflows: [solo],
        pollIntervalMs: 2 ** 31,
        cronPollIntervalMs: 2 ** 31,
        cronRecoveryIntervalMs: 2 ** 31,
        taskLeaseMs: 2 ** 33,
      });
      extra.push(other);
      await other.start();
      const result = await other.execute('solo');
      expect(result.status).toBe('completed');
      await pause(50);
      expect(overflowWarnings).toBe(0);
    });

    it('accepts taskTimeoutMs Infinity and refuses durations past 100 years with a ConfigurationError', async () => {
      const unlimited = await DefaultRunner.create({
        database: 'sqlite::memory:',
        taskTimeoutMs: Number.POSITIVE_INFINITY,
      });
      await unlimited.shutdown();
      const created = DefaultRunner.create({ database: 'sqlite::memory:', taskLeaseMs: 1e16 });
      await expect(created).rejects.toBeInstanceOf(ConfigurationError);
      await expect(created).rejects.toThrow(/taskLeaseMs is 10000000000000000 ms, over the limit/);
    });
  });

  describe('NUL characters, which PostgreSQL cannot store', () => {
    it('fails a task that throws an error with a NUL, storing the message with U+FFFD, and keeps running', async () => {
      const result = await runner.execute('nul-thrower', {}, { timeoutMs: 20_000 });
      expect(result.status).toBe('failed');
      expect(result.tasks[0]?.error).toBe('a\uFFFDb');
      await expect(runner.execute('quick', {}, { timeoutMs: 20_000 })).resolves.toMatchObject({ status: 'completed' });
    });

    it('stores a context string and key with a NUL and reads them back unchanged', async () => {
      const result = await runner.execute('nul-writer', { 'in\u0000put': 'x\u0000' }, { timeoutMs: 20_000 });
      expect(result.status).toBe('completed');
      const read = await runner.getExecutionResult(result.executionId);
      expect(read.finalContext).toEqual({ 'in\u0000put': 'x\u0000', k: 'a\u0000b' });
    });

    it('refuses NUL in input text up front with the typed error, writing nothing', async () => {
      const before = (await runner.listExecutions({ limit: 1000 })).length;
      await expect(runner.executeAsync('quick', {}, { idempotencyKey: 'k\u0000' })).rejects.toBeInstanceOf(
        ValidationError,
      );
      await expect(runner.listExecutions({ workflowName: 'q\u0000' })).rejects.toBeInstanceOf(ValidationError);
      const execution = await runner.executeAsync('gated');
      await expect(runner.pauseExecution(execution.id, 'why\u0000')).rejects.toThrow(/pause reason .* NUL character/);
      await runner.cancelExecution(execution.id);
      const schedule = { name: 's', workflowName: 'quick', cronExpression: '0 0 * * *' };
      await expect(runner.addCronSchedule({ ...schedule, name: 's\u0000' })).rejects.toBeInstanceOf(ValidationError);
      await expect(runner.addCronSchedule({ ...schedule, timezone: 'UTC\u0000' })).rejects.toThrow(/NUL character/);
      expect(await runner.listCronSchedules()).toEqual([]);
      expect((await runner.listExecutions({ limit: 1000 })).length).toBe(before + 1);
      await expect(DefaultRunner.create({ ...db.config, runnerId: 'r\u0000' })).rejects.toBeInstanceOf(
        ConfigurationError,
      );
    });
  });

  describe('idempotency keys', () => {
    it('refuses a key over 1024 UTF-8 bytes with a ValidationError, without failing concurrent requests', async () => {
      const long = 'k'.repeat(3000);
      const requests = Array.from({ length: 20 }, (_, n) =>
        runner.executeAsync('quick', { n }, n === 10 ? { idempotencyKey: long } : { idempotencyKey: `key-${n}` }),
      );
      const settled = await Promise.allSettled(requests);
      expect(settled.map((s) => s.status)).toEqual(
        Array.from({ length: 20 }, (_, n) => (n === 10 ? 'rejected' : 'fulfilled')),
      );
      const refused = settled[10] as PromiseRejectedResult;
      expect(refused.reason).toBeInstanceOf(ValidationError);
      expect(String(refused.reason.message)).toMatch(/3000 bytes in UTF-8, over the limit of 1024/);
      await expect(runner.executeAsync('quick', {}, { idempotencyKey: 'k'.repeat(1024) })).resolves.toMatchObject({
        workflowName: 'quick',
      });
    });
  });

  it('reports PipelineTimeoutError for a short wait still', async () => {
    release = gate();
    const execution = await runner.executeAsync('gated');
    await expect(execution.wait({ timeoutMs: 50 })).rejects.toBeInstanceOf(PipelineTimeoutError);
    release.open();
    await expect(execution.wait()).resolves.toMatchObject({ status: 'completed' });
  });
});
