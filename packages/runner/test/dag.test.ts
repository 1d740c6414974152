import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Context,
  DefaultRunner,
  defineWorkflow,
  type Json,
  NonRetryableError,
  type TaskResult,
} from '../src/index.js';
import { ADAPTERS, type TestDatabase } from './support.js';

/** What each task saw when it ran, by execution id then task id. */
const seen = new Map<string, Map<string, Record<string, Json>>>();
function record(ctx: Context, executionId: string, taskId: string): void {
  const byTask = seen.get(executionId) ?? new Map<string, Record<string, Json>>();
  byTask.set(taskId, ctx.toJSON());
  seen.set(executionId, byTask);
}
const sawBy = (executionId: string, taskId: string) => seen.get(executionId)?.get(taskId);
const statusOf = (tasks: TaskResult[], taskId: string) => tasks.find((t) => t.taskId === taskId)?.status;

const chain = defineWorkflow({
  name: 'chain',
  tasks: [
    { id: 'one', run: (ctx) => void ctx.set('trail', ['one']) },
    {
      id: 'two',
      dependsOn: ['one'],
      run: (ctx) => void ctx.set('trail', [...(ctx.get<string[]>('trail') ?? []), 'two']),
    },
    {
      id: 'three',
      dependsOn: ['two'],
      run: (ctx) => void ctx.set('trail', [...(ctx.get<string[]>('trail') ?? []), 'three']),
    },
  ],
});

const diamond = defineWorkflow({
  name: 'diamond',
  tasks: [
    { id: 'top', run: (ctx) => void ctx.set('n', 1) },
    { id: 'left', dependsOn: ['top'], run: (ctx) => void ctx.set('left', (ctx.get<number>('n') ?? 0) + 10) },
    { id: 'right', dependsOn: ['top'], run: (ctx) => void ctx.set('right', (ctx.get<number>('n') ?? 0) + 100) },
    {
      id: 'bottom',
      dependsOn: ['left', 'right'],
      run: (ctx) => void ctx.set('sum', (ctx.get<number>('left') ?? 0) + (ctx.get<number>('right') ?? 0)),
    },
  ],
});

const FAN = 50;
const fan = defineWorkflow({
  name: 'fan',
  tasks: [
    { id: 'source', run: (ctx) => void ctx.set('base', 1000) },
    ...Array.from({ length: FAN }, (_, i) => ({
      id: `part_${i}`,
      dependsOn: ['source'],
      run: (ctx: Context) => void ctx.set(`part_${i}`, (ctx.get<number>('base') ?? 0) + i),
    })),
    {
      id: 'sink',
      dependsOn: Array.from({ length: FAN }, (_, i) => `part_${i}`),
      run: (ctx: Context) => {
        let total = 0;
        for (let i = 0; i < FAN; i += 1) total += ctx.get<number>(`part_${i}`) ?? Number.NaN;
        ctx.set('total', total);
      },
    },
  ],
});

const merging = defineWorkflow({
  name: 'merging',
  tasks: [
    {
      id: 't1',
      run: (ctx, info) => {
        record(ctx, info.executionId, 't1');
        ctx.set('cfg', { nested: { y: 2 } });
        ctx.set('list', [3]);
        ctx.set('order', 't1');
        ctx.delete('gone');
      },
    },
    { id: 't2', run: (ctx) => void ctx.set('order', 't2').set('side', 'from t2') },
    { id: 't3', run: (ctx) => void ctx.set('order', 't3') },
    {
      id: 'flaky',
      retry: { maxAttempts: 2, initialDelayMs: 5, jitter: false },
      run: (ctx, info) => {
        ctx.set('junk', `written by attempt ${info.attempt}`);
        if (info.attempt === 1) throw new Error('first attempt fails');
        ctx.delete('junk');
        ctx.set('good', true);
      },
    },
    { id: 'join', dependsOn: ['t3', 't2', 't1'], run: (ctx, info) => record(ctx, info.executionId, 'join') },
    { id: 'lonely', dependsOn: ['t2'], run: (ctx, info) => record(ctx, info.executionId, 'lonely') },
    {
      id: 'grandchild',
      dependsOn: ['lonely'],
      run: (ctx, info) => {
        record(ctx, info.executionId, 'grandchild');
        ctx.set('cfg', { a: 'overridden', extra: [1] });
      },
    },
  ],
});

const ok = (id: string) => ({ id, run: () => {} });
const bad = { id: 'bad', run: () => Promise.reject(new NonRetryableError('bad by design')) };
const triggers = defineWorkflow({
  name: 'triggers',
  tasks: [
    ok('good'),
    bad,
    { ...ok('all_success'), dependsOn: ['good', 'bad'], trigger: 'all_success' },
    { ...ok('all_done'), dependsOn: ['good', 'bad'], trigger: 'all_done' },
    { ...ok('one_success'), dependsOn: ['good', 'bad'], trigger: 'one_success' },
    { ...ok('one_failed'), dependsOn: ['good', 'bad'], trigger: 'one_failed' },
    { ...ok('none_failed'), dependsOn: ['good', 'bad'], trigger: 'none_failed' },
    { ...ok('all_success_met'), dependsOn: ['good'], trigger: 'all_success' },
    { ...ok('one_failed_unmet'), dependsOn: ['good'], trigger: 'one_failed' },
    { ...ok('one_success_unmet'), dependsOn: ['bad'], trigger: 'one_success' },
    { ...ok('none_failed_met'), dependsOn: ['good'], trigger: 'none_failed' },
    // Downstream of a skipped task: skipped is neither a success nor a failure.
    { ...ok('after_skip_all_success'), dependsOn: ['all_success'], trigger: 'all_success' },
    { ...ok('after_skip_none_failed'), dependsOn: ['all_success'], trigger: 'none_failed' },
    { ...ok('after_skip_all_done'), dependsOn: ['all_success'], trigger: 'all_done' },
  ],
});

const conditional = defineWorkflow({
  name: 'conditional',
  tasks: [
    { id: 'decide', run: (ctx) => void ctx.set('go', false) },
    {
      id: 'gated',
      dependsOn: ['decide'],
      when: (ctx) => ctx.get('go') === true,
      run: (ctx) => void ctx.set('ran', true),
    },
    {
      id: 'open',
      dependsOn: ['decide'],
      when: (ctx) => ctx.get('go') === false,
      run: (ctx) => void ctx.set('open', true),
    },
    { id: 'after', dependsOn: ['gated'], run: (ctx) => void ctx.set('after', true) },
    { id: 'tolerant', dependsOn: ['gated'], trigger: 'none_failed', run: (ctx) => void ctx.set('tolerant', true) },
  ],
});

describe.each(ADAPTERS)('DAG execution on $name', (adapter) => {
  let db: TestDatabase;
  let runner: DefaultRunner;

  beforeAll(async () => {
    db = adapter.open();
    runner = await DefaultRunner.create({
      ...db.config,
      workflows: [chain, diamond, fan, merging, triggers, conditional],
      maxConcurrentTasks: 32,
      pollIntervalMs: 20,
    });
    await runner.start();
  });

  afterAll(async () => {
    await runner?.shutdown();
    await db?.remove();
  });

  it('runs a chain in dependency order, each task seeing its predecessors', async () => {
    const result = await runner.execute('chain', { input: 'x' });
    expect(result.status).toBe('completed');
    expect(result.finalContext).toEqual({ input: 'x', trail: ['one', 'two', 'three'] });
    expect(result.completedAt).toBeInstanceOf(Date);
    expect(result.durationMs).toBe(result.completedAt!.getTime() - result.startedAt!.getTime());
    expect(await runner.getExecutionResult(result.executionId)).toEqual(result);
    expect(result.tasks.map((t) => [t.taskId, t.status, t.attempts])).toEqual([
      ['one', 'completed', 1],
      ['two', 'completed', 1],
      ['three', 'completed', 1],
    ]);
    const [one, two, three] = result.tasks;
    expect(one!.completedAt!.getTime()).toBeLessThanOrEqual(two!.startedAt!.getTime());
    expect(two!.completedAt!.getTime()).toBeLessThanOrEqual(three!.startedAt!.getTime());
  });

  it('joins both branches of a diamond', async () => {
    const result = await runner.execute('diamond');
    expect(result.status).toBe('completed');
    expect(result.finalContext).toEqual({ n: 1, left: 11, right: 101, sum: 112 });
  });

  it(`fans out to ${FAN} tasks and fans in once all of them completed`, async () => {
    const result = await runner.execute('fan');
    expect(result.status).toBe('completed');
    expect(result.tasks).toHaveLength(FAN + 2);
    expect(result.tasks.every((t) => t.status === 'completed' && t.attempts === 1)).toBe(true);
    expect(result.finalContext.total).toBe(FAN * 1000 + (FAN * (FAN - 1)) / 2);
  });

  it('gives each task deepMerge(input, completed ancestors in canonical order) and builds finalContext alike', async () => {
    const input = { cfg: { a: 1, nested: { x: 1 } }, list: [1, 2], gone: 'here', keep: 'in' };
    const result = await runner.execute('merging', input);
    expect(result.status).toBe('completed');
    const id = result.executionId;
    expect(sawBy(id, 't1')).toEqual(input);
    // t1, t2, t3 are independent; canonical order is declaration order, so t3's `order` wins.
    expect(sawBy(id, 'join')).toEqual({
      cfg: { a: 1, nested: { x: 1, y: 2 } },
      list: [3],
      keep: 'in',
      order: 't3',
      side: 'from t2',
    });
    // Only ancestors count: lonely descends from t2 alone, whatever finished first.
    expect(sawBy(id, 'lonely')).toEqual({ ...input, order: 't2', side: 'from t2' });
    expect(sawBy(id, 'grandchild')).toEqual({ ...input, order: 't2', side: 'from t2' });
    expect(result.finalContext).toEqual({
      cfg: { a: 'overridden', nested: { x: 1, y: 2 }, extra: [1] },
      list: [3],
      keep: 'in',
      order: 't3',
      side: 'from t2',
      good: true,
    });
    expect(result.tasks.find((t) => t.taskId === 'flaky')?.attempts).toBe(2);
    expect(await runner.getExecutionResult(id)).toEqual(result);
  });

  it('applies every trigger rule once all dependencies are terminal', async () => {
    const result = await runner.execute('triggers');
    const { status, tasks } = result;
    expect(await runner.getExecutionResult(result.executionId)).toEqual(result);
    expect(status).toBe('failed');
    expect(statusOf(tasks, 'bad')).toBe('failed');
    expect(statusOf(tasks, 'all_success')).toBe('skipped');
    expect(statusOf(tasks, 'all_done')).toBe('completed');
    expect(statusOf(tasks, 'one_success')).toBe('completed');
    expect(statusOf(tasks, 'one_failed')).toBe('completed');
    expect(statusOf(tasks, 'none_failed')).toBe('skipped');
    expect(statusOf(tasks, 'all_success_met')).toBe('completed');
    expect(statusOf(tasks, 'one_failed_unmet')).toBe('skipped');
    expect(statusOf(tasks, 'one_success_unmet')).toBe('skipped');
    expect(statusOf(tasks, 'none_failed_met')).toBe('completed');
    expect(statusOf(tasks, 'after_skip_all_success')).toBe('skipped');
    expect(statusOf(tasks, 'after_skip_none_failed')).toBe('completed');
    expect(statusOf(tasks, 'after_skip_all_done')).toBe('completed');
    expect(tasks.find((t) => t.taskId === 'all_success')).toMatchObject({ attempts: 0 });
  });

  it('skips a task whose `when` is false without failing the pipeline', async () => {
    const result = await runner.execute('conditional');
    expect(result.status).toBe('completed');
    expect(statusOf(result.tasks, 'gated')).toBe('skipped');
    expect(statusOf(result.tasks, 'open')).toBe('completed');
    expect(statusOf(result.tasks, 'after')).toBe('skipped');
    expect(statusOf(result.tasks, 'tolerant')).toBe('completed');
    expect(result.finalContext).toEqual({ go: false, open: true, tolerant: true });
  });
});
