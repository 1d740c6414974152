import { randomUUID } from 'node:crypto';
import {
  ContextError,
  defineWorkflow,
  ExecutionNotFoundError,
  type Json,
  MAX_MAP_ITEMS,
  ValidationError,
} from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { ADAPTERS, runnersPerTest, waitFor } from './support.js';

/**
 * Map tasks (dynamic fan-out) through real runners, on both adapters: one instance per item,
 * each with its own attempts; results gathered in item order; the first instance to fail for
 * good fails the task and cancels the others.
 */
describe.each(ADAPTERS)('map tasks, on $name', (adapter) => {
  const runners = runnersPerTest(adapter, () => ({ pollIntervalMs: 10, enableCronScheduling: false }), {
    shutdownTimeoutMs: 1_000,
  });

  it('runs one instance per item and gathers the results in item order; a failing item re-runs alone', async () => {
    const runs = new Map<number, number>();
    const wf = defineWorkflow({
      name: 'fan',
      tasks: [
        {
          id: 'list',
          run: (ctx) =>
            void ctx.set(
              'customers',
              Array.from({ length: 200 }, (_, i) => `c${i}`),
            ),
        },
        {
          id: 'each',
          dependsOn: ['list'],
          map: (ctx) => ctx.get<string[]>('customers') ?? [],
          retry: { maxAttempts: 2, initialDelayMs: 1 },
          run: async (_ctx, info) => {
            runs.set(info.index!, (runs.get(info.index!) ?? 0) + 1);
            // Finish out of order, so that the gathering cannot lean on the order of completion.
            await new Promise((resolve) => setTimeout(resolve, (200 - info.index!) % 7));
            if (info.index === 7 && info.attempt === 1) throw new Error('flaky item');
            return { customer: info.item as string, index: info.index! };
          },
        },
        {
          id: 'total',
          dependsOn: ['each'],
          run: (ctx) => void ctx.set('count', (ctx.get<Json[]>('each') ?? []).length),
        },
      ],
    });
    const runner = await runners.open({ workflows: [wf], maxConcurrentTasks: 8 });
    await runner.start();
    const result = await (await runner.executeAsync('fan')).wait();
    expect(result.tasks.map((t) => [t.taskId, t.status, t.error])).toEqual([
      ['list', 'completed', undefined],
      ['each', 'completed', undefined],
      ['total', 'completed', undefined],
    ]);
    expect(result.status).toBe('completed');
    const each = result.finalContext.each as Array<{ customer: string; index: number }>;
    expect(each).toHaveLength(200);
    expect(each.map((r) => r.index)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(each[42]).toEqual({ customer: 'c42', index: 42 });
    expect(result.finalContext.count).toBe(200);
    // Item 7 ran twice (its first attempt failed); every other item once.
    expect(runs.get(7)).toBe(2);
    expect([...runs.entries()].filter(([index, n]) => index !== 7 && n !== 1)).toEqual([]);
    const task = result.tasks.find((t) => t.taskId === 'each')!;
    expect(task.status).toBe('completed');
    expect(task.instances).toEqual({ total: 200, completed: 200, failed: 0, running: 0 });
    // The instances are not tasks of the pipeline.
    expect(result.tasks.map((t) => t.taskId)).toEqual(['list', 'each', 'total']);
  });

  it('refuses a write to ctx inside an instance with ContextError, failing that item', async () => {
    const errors: unknown[] = [];
    const wf = defineWorkflow({
      name: 'writer',
      tasks: [
        {
          id: 'each',
          map: () => [1],
          retry: { maxAttempts: 1 },
          run: (ctx) => {
            try {
              ctx.set('x', 1);
            } catch (error) {
              errors.push(error);
              throw error;
            }
          },
        },
      ],
    });
    const runner = await runners.open({ workflows: [wf] });
    await runner.start();
    const result = await (await runner.executeAsync('writer')).wait();
    expect(errors[0]).toBeInstanceOf(ContextError);
    expect(result.status).toBe('failed');
    expect(result.tasks[0]!.error).toMatch(/item 0 failed: .*read-only/);
  });

  it('completes an empty list at once with [] and runs nothing', async () => {
    let ran = 0;
    const wf = defineWorkflow({
      name: 'empty',
      tasks: [
        {
          id: 'each',
          map: () => [],
          run: () => {
            ran += 1;
          },
        },
      ],
    });
    const runner = await runners.open({ workflows: [wf] });
    await runner.start();
    const result = await (await runner.executeAsync('empty')).wait();
    expect(result.status).toBe('completed');
    expect(result.finalContext.each).toEqual([]);
    expect(ran).toBe(0);
  });

  it(`fails the task with ValidationError for ${MAX_MAP_ITEMS + 1} items or a non-array, never retried`, async () => {
    let calls = 0;
    const wf = defineWorkflow({
      name: 'too-many',
      tasks: [
        {
          id: 'each',
          retry: { maxAttempts: 3, initialDelayMs: 1 },
          map: (ctx) => {
            calls += 1;
            return ctx.get('bad') === true ? ('nope' as never) : Array.from({ length: MAX_MAP_ITEMS + 1 }, (_, i) => i);
          },
          run: () => undefined,
        },
      ],
    });
    const runner = await runners.open({ workflows: [wf] });
    await runner.start();
    const tooMany = await (await runner.executeAsync('too-many')).wait();
    expect(tooMany.status).toBe('failed');
    expect(tooMany.tasks[0]!.error).toMatch(
      /^ValidationError: map of task "each" returned 10001 items, over the limit of 10000/,
    );
    // Refused whole: not one instance was written.
    expect(tooMany.tasks[0]!.instances).toBeUndefined();
    const notArray = await (await runner.executeAsync('too-many', { bad: true })).wait();
    expect(notArray.tasks[0]!.error).toMatch(/^ValidationError: map of task "each" must return an array/);
    expect(calls).toBe(2);
  });

  it('fails the task when an item fails for good, cancels the others, and takes the one_failed branch', async () => {
    const wf = defineWorkflow({
      name: 'breaks',
      tasks: [
        {
          id: 'each',
          map: () => [0, 1, 2, 3],
          retry: { maxAttempts: 1 },
          run: async (_ctx, info) => {
            if (info.index === 0) throw new Error('item zero is broken');
            // The others wait until cancelled (their signal aborts).
            await new Promise((_, reject) => info.signal.addEventListener('abort', () => reject(info.signal.reason)));
          },
        },
        { id: 'cleanup', dependsOn: ['each'], trigger: 'one_failed', run: (ctx) => void ctx.set('cleaned', true) },
      ],
    });
    const runner = await runners.open({ workflows: [wf], maxConcurrentTasks: 4 });
    await runner.start();
    const result = await (await runner.executeAsync('breaks')).wait();
    expect(result.status).toBe('failed');
    const each = result.tasks.find((t) => t.taskId === 'each')!;
    expect(each.status).toBe('failed');
    expect(each.error).toMatch(/^item 0 failed: item zero is broken/);
    expect(each.instances?.failed).toBe(1);
    expect(each.instances?.completed).toBe(0);
    expect(each.instances?.total).toBe(4);
    expect(result.finalContext.cleaned).toBe(true);
  });

  it("obeys the task's rate limit: instances over it wait, holding no slot", async () => {
    const ran: number[] = [];
    const wf = defineWorkflow({
      name: 'paced',
      tasks: [
        {
          id: 'each',
          map: () => Array.from({ length: 8 }, (_, i) => i),
          rateLimit: { name: 'partner-api', limit: 3, periodMs: 3_600_000 },
          run: (_ctx, info) => {
            ran.push(info.index!);
          },
        },
      ],
    });
    const runner = await runners.open({ workflows: [wf], maxConcurrentTasks: 8 });
    await runner.start();
    const execution = await runner.executeAsync('paced');
    await waitFor(() => ran.length === 3);
    // The limit reached and held: the five others are ready again an hour on, none running.
    await waitFor(async () => {
      const each = (await runner.getExecutionResult(execution.id)).tasks[0]!;
      return each.instances?.completed === 3 && each.instances.running === 0;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(ran).toHaveLength(3);
    const each = (await runner.getExecutionResult(execution.id)).tasks[0]!;
    expect(each).toMatchObject({ status: 'running', instances: { total: 8, completed: 3, failed: 0, running: 0 } });
    await runner.cancelExecution(execution.id);
  });

  it('lists the instances of a map task in item order, with item, status, attempts, times and result', async () => {
    const wf = defineWorkflow({
      name: 'shout',
      tasks: [
        { id: 'words', run: (ctx) => void ctx.set('words', ['ab', 'cd', 'ef']) },
        {
          id: 'each',
          dependsOn: ['words'],
          map: (ctx) => ctx.get<string[]>('words') ?? [],
          retry: { maxAttempts: 2, initialDelayMs: 1 },
          run: (_ctx, info) => {
            if (info.index === 1 && info.attempt === 1) throw new Error('hoarse');
            return (info.item as string).toUpperCase();
          },
        },
      ],
    });
    const runner = await runners.open({ workflows: [wf] });
    await runner.start();
    const execution = await runner.executeAsync('shout');
    expect((await execution.wait()).status).toBe('completed');
    const instances = await runner.listMapInstances(execution.id, 'each');
    expect(
      instances.map(({ index, item, status, attempts, result }) => [index, item, status, attempts, result]),
    ).toEqual([
      [0, 'ab', 'completed', 1, 'AB'],
      [1, 'cd', 'completed', 2, 'CD'],
      [2, 'ef', 'completed', 1, 'EF'],
    ]);
    // Item 1's failed first attempt is behind it: a completed instance has no error.
    expect(instances.map((instance) => instance.error)).toEqual([null, null, null]);
    for (const instance of instances) {
      expect(instance.completedAt!.getTime()).toBeGreaterThanOrEqual(instance.startedAt!.getTime());
    }
    // Pages of them; a bad page is refused with what the range is.
    const page = async (limit: number, offset: number) =>
      (await runner.listMapInstances(execution.id, 'each', { limit, offset })).map((instance) => instance.index);
    expect([await page(2, 0), await page(2, 2)]).toEqual([[0, 1], [2]]);
    await expect(runner.listMapInstances(execution.id, 'each', { limit: 10_001 })).rejects.toThrow(
      'limit must be an integer from 1 to 10000, got 10001.',
    );
    await expect(runner.listMapInstances(execution.id, 'each', { offset: -1 })).rejects.toBeInstanceOf(ValidationError);
    // A task that does not map has no instances; an unknown execution is refused.
    expect(await runner.listMapInstances(execution.id, 'words')).toEqual([]);
    await expect(runner.listMapInstances(randomUUID(), 'each')).rejects.toBeInstanceOf(ExecutionNotFoundError);
  });
});
