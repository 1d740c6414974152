import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ContextError,
  DefaultRunner,
  defineWorkflow,
  ExecutionNotFoundError,
  IdempotencyConflictError,
  NonRetryableError,
  type TaskFailedEvent,
  type TaskRunInfo,
  WorkflowNotFoundError,
} from '../src/index.js';
import { ADAPTERS, gate, type TestDatabase, untilAborted, waitFor } from './support.js';

/** Signals each attempt received, by execution id, so tests can see what was aborted and why. */
const signals = new Map<string, TaskRunInfo['signal'][]>();
const started = new Set<string>();
function track(info: TaskRunInfo): AbortSignal {
  signals.set(info.executionId, [...(signals.get(info.executionId) ?? []), info.signal]);
  started.add(info.executionId);
  return info.signal;
}

const retried = defineWorkflow({
  name: 'retried',
  tasks: [
    {
      id: 'flaky',
      retry: { maxAttempts: 3, initialDelayMs: 10, backoff: 'fixed', jitter: false },
      run: (ctx, info) => {
        if (info.attempt < 3) throw new Error(`attempt ${info.attempt} failed`);
        ctx.set('attempt', info.attempt);
      },
    },
  ],
});

const exhausted = defineWorkflow({
  name: 'exhausted',
  tasks: [
    {
      id: 'always',
      retry: { maxAttempts: 2, initialDelayMs: 5, jitter: false },
      run: (_ctx, info) => Promise.reject(new Error(`boom ${info.attempt}`)),
    },
    { id: 'downstream', dependsOn: ['always'], run: () => {} },
  ],
});

const fatal = defineWorkflow({
  name: 'fatal',
  tasks: [
    {
      id: 'refuses',
      retry: { maxAttempts: 5, initialDelayMs: 5 },
      run: () => Promise.reject(new NonRetryableError('no point')),
    },
    {
      id: 'picky',
      retry: { maxAttempts: 5, initialDelayMs: 5, retryOn: (e) => (e as Error).message === 'transient' },
      run: () => Promise.reject(new Error('permanent')),
    },
  ],
});

const slow = defineWorkflow({
  name: 'slow',
  tasks: [
    {
      id: 'cooperative',
      timeoutMs: 100,
      retry: { maxAttempts: 1 },
      run: async (_ctx, info) => untilAborted(track(info)),
    },
    { id: 'stubborn', timeoutMs: 100, retry: { maxAttempts: 1 }, run: () => new Promise<void>(() => {}) },
  ],
});

const blocking = defineWorkflow({
  name: 'blocking',
  tasks: [
    {
      id: 'hold',
      // Attempts after the first finish at once: pause/resume and shutdown tests run it twice.
      run: async (ctx, info) => {
        const signal = track(info);
        if (info.attempt === 1) await untilAborted(signal);
        ctx.set('finishedOnAttempt', info.attempt);
      },
    },
    { id: 'after', dependsOn: ['hold'], run: (ctx) => void ctx.set('after', true) },
  ],
});

let release = gate();
const gated = defineWorkflow({
  name: 'gated',
  tasks: [
    {
      id: 'wait',
      run: async (_ctx, info) => {
        track(info);
        await release.promise;
      },
    },
  ],
});

const quick = defineWorkflow({ name: 'quick', tasks: [{ id: 'only', run: (ctx) => void ctx.set('done', true) }] });
const other = defineWorkflow({ name: 'other', tasks: [{ id: 'only', run: () => {} }] });
const bloated = defineWorkflow({
  name: 'bloated',
  tasks: [{ id: 'writer', run: (ctx) => void ctx.set('blob', 'x'.repeat(20_000)) }],
});

const ALL = [retried, exhausted, fatal, slow, blocking, gated, quick, other, bloated];

describe.each(ADAPTERS)('pipeline control on $name', (adapter) => {
  let db: TestDatabase;
  let runner: DefaultRunner;
  const failures: TaskFailedEvent[] = [];

  beforeAll(async () => {
    db = adapter.open();
    runner = await DefaultRunner.create({
      ...db.config,
      workflows: ALL,
      pollIntervalMs: 20,
      maxContextBytes: 10_000,
      taskLeaseMs: 3_000,
    });
    runner.on('task:failed', (event) => failures.push(event));
    await runner.start();
  });

  afterAll(async () => {
    release.open();
    await runner?.shutdown({ timeoutMs: 1000 });
    await db?.remove();
  });

  it('retries a failing task and completes once an attempt succeeds', async () => {
    const result = await runner.execute('retried');
    expect(result.status).toBe('completed');
    expect(result.tasks[0]).toMatchObject({
      status: 'completed',
      attempts: 3,
      output: { set: { attempt: 3 }, deleted: [] },
    });
    expect(result.finalContext).toEqual({ attempt: 3 });
    const mine = failures.filter((f) => f.executionId === result.executionId);
    expect(mine.map((f) => [f.attempt, f.willRetry])).toEqual([
      [1, true],
      [2, true],
    ]);
    // Each event carries the stack of the error thrown, for logs.
    for (const failure of mine) expect(failure.stack).toMatch(/\n\s+at /);
  });

  it('fails the task and the pipeline once the attempts are used up, skipping its dependents', async () => {
    const result = await runner.execute('exhausted');
    expect(result.status).toBe('failed');
    expect(result.tasks[0]).toMatchObject({ taskId: 'always', status: 'failed', attempts: 2 });
    // The last attempt's message, then its stack frames, down to the line of the task that threw.
    const [message, ...frames] = result.tasks[0]!.error!.split('\n');
    expect(message).toBe('boom 2');
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.every((frame) => /^\s+at /.test(frame))).toBe(true);
    expect(frames.join('\n')).toContain('control.test.ts');
    expect(result.tasks[1]).toMatchObject({ taskId: 'downstream', status: 'skipped' });
    expect(result.error).toContain('boom 2');
    const last = failures.filter((f) => f.executionId === result.executionId).at(-1);
    expect(last).toMatchObject({ attempt: 2, willRetry: false });
  });

  it('does not retry a NonRetryableError, nor an error that retryOn refuses', async () => {
    const result = await runner.execute('fatal');
    expect(result.status).toBe('failed');
    expect(result.tasks.map((t) => [t.taskId, t.status, t.attempts, t.error?.split('\n')[0]])).toEqual([
      ['refuses', 'failed', 1, 'NonRetryableError: no point'],
      ['picky', 'failed', 1, 'permanent'],
    ]);
  });

  it('aborts the signal of a task that times out and fails the attempt, even if the task ignores it', async () => {
    const result = await runner.execute('slow');
    expect(result.status).toBe('failed');
    for (const task of result.tasks) {
      expect(task.status).toBe('failed');
      expect(task.error).toMatch(/timed out after 100 ms/);
    }
    const [signal] = signals.get(result.executionId) ?? [];
    expect(signal?.aborted).toBe(true);
    expect((signal!.reason as Error).name).toBe('TimeoutError');
  });

  it('cancels a running pipeline: aborts its running task and cancels what is left', async () => {
    const execution = await runner.executeAsync('blocking');
    await waitFor(() => started.has(execution.id));
    await execution.cancel();
    const result = await execution.wait();
    expect(result.status).toBe('cancelled');
    expect(result.tasks.map((t) => t.status)).toEqual(['cancelled', 'cancelled']);
    expect(signals.get(execution.id)?.[0]?.aborted).toBe(true);
    expect(await execution.status()).toBe('cancelled');
    // Cancelling a terminal execution changes nothing.
    await runner.cancelExecution(execution.id);
    expect(await runner.getExecutionStatus(execution.id)).toBe('cancelled');
  });

  it('pauses a running pipeline without counting a failure, and resumes it to completion', async () => {
    const execution = await runner.executeAsync('blocking');
    await waitFor(() => started.has(execution.id));
    await runner.pauseExecution(execution.id, 'maintenance');
    expect(await execution.status()).toBe('paused');
    expect(signals.get(execution.id)?.[0]?.aborted).toBe(true);
    const paused = await runner.getExecutionResult(execution.id);
    expect(paused.tasks[0]).toMatchObject({ status: 'ready' });
    await runner.resumeExecution(execution.id);
    const result = await execution.wait();
    expect(result.status).toBe('completed');
    expect(result.finalContext).toEqual({ finishedOnAttempt: 2, after: true });
    expect(result.tasks[0]).toMatchObject({ status: 'completed', attempts: 2 });
    expect(result.tasks[0]!.error).toBeUndefined();
    expect(failures.some((f) => f.executionId === execution.id)).toBe(false);
  });

  it('returns the first execution for a repeated idempotency key and writes nothing new', async () => {
    const key = `key-${randomUUID()}`;
    const first = await runner.executeAsync('quick', { n: 1 }, { idempotencyKey: key });
    const second = await runner.executeAsync('quick', { n: 2 }, { idempotencyKey: key });
    expect(second.id).toBe(first.id);
    const result = await second.wait();
    expect(result.finalContext).toEqual({ n: 1, done: true });
    const again = await runner.execute('quick', { n: 3 }, { idempotencyKey: key });
    expect(again.executionId).toBe(first.id);
    await expect(runner.executeAsync('other', {}, { idempotencyKey: key })).rejects.toBeInstanceOf(
      IdempotencyConflictError,
    );
  });

  it('refuses an unknown workflow before writing anything', async () => {
    const before = await runner.listExecutions({ limit: 1000 });
    await expect(runner.executeAsync('nope', {})).rejects.toBeInstanceOf(WorkflowNotFoundError);
    await expect(runner.execute('nope')).rejects.toThrow(/"nope" is not registered/);
    expect(await runner.listExecutions({ limit: 1000 })).toHaveLength(before.length);
  });

  it('refuses a context that is not plain JSON or is too large, before writing anything', async () => {
    const before = await runner.listExecutions({ limit: 1000 });
    const bad = [{ when: new Date() }, { n: Number.NaN }, { big: 'x'.repeat(20_000) }, [1, 2], { f: () => 1 }];
    for (const context of bad) {
      await expect(runner.executeAsync('quick', context as never)).rejects.toBeInstanceOf(ContextError);
    }
    expect(await runner.listExecutions({ limit: 1000 })).toHaveLength(before.length);
  });

  it('fails a task whose writes grow the context past maxContextBytes, without retrying', async () => {
    const result = await runner.execute('bloated');
    expect(result.status).toBe('failed');
    expect(result.tasks[0]).toMatchObject({ status: 'failed', attempts: 1 });
    expect(result.tasks[0]!.error).toMatch(/maxContextBytes/);
    expect(result.finalContext).toEqual({});
  });

  it('raises ExecutionNotFoundError for unknown ids', async () => {
    const unknown = randomUUID();
    for (const id of [unknown, 'not-a-uuid']) {
      await expect(runner.getExecutionStatus(id)).rejects.toBeInstanceOf(ExecutionNotFoundError);
      await expect(runner.getExecutionResult(id)).rejects.toBeInstanceOf(ExecutionNotFoundError);
      await expect(runner.cancelExecution(id)).rejects.toBeInstanceOf(ExecutionNotFoundError);
      await expect(runner.pauseExecution(id)).rejects.toBeInstanceOf(ExecutionNotFoundError);
      await expect(runner.resumeExecution(id)).rejects.toBeInstanceOf(ExecutionNotFoundError);
    }
  });

  it('lists executions newest first, filtered by workflow and status', async () => {
    const a = await runner.execute('quick', { i: 1 });
    const b = await runner.execute('quick', { i: 2 });
    const listed = await runner.listExecutions({ workflowName: 'quick', status: 'completed', limit: 2 });
    expect(listed.map((s) => s.executionId)).toEqual([b.executionId, a.executionId]);
    expect(listed[0]).not.toHaveProperty('finalContext');
  });

  it('times out a wait without touching the pipeline', async () => {
    release = gate();
    const execution = await runner.executeAsync('gated');
    await expect(execution.wait({ timeoutMs: 50 })).rejects.toMatchObject({ code: 'PIPELINE_TIMEOUT' });
    release.open();
    expect((await execution.wait()).status).toBe('completed');
  });
});
