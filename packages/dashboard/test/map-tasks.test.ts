import { randomUUID } from 'node:crypto';
import { type DefaultRunner, defineWorkflow, type PipelineExecution } from '@orreryjs/runner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboard, type Dashboard } from '../src/index.js';
import { BACKENDS, createRunner, HOSTILE_NAME, ORIGIN, waitFor } from './support.js';

// biome-ignore lint/suspicious/noExplicitAny: the API's JSON bodies, read field by field
type Loose = any;

/** The items of the map: the fourth would run script if the pages did not escape it. */
const ITEMS = ['a', 'b', 'c', HOSTILE_NAME, 'e', 'f'];

/**
 * Map tasks on the dashboard: a real runner holds a map halfway (three items done, three
 * running); the DAG draws the task once with its count, the execution's JSON counts its
 * instances per task, and `GET api/executions/:id/tasks/:taskId/instances` lists each of them.
 */
describe.each(BACKENDS)('dashboard map tasks on $name', (backend) => {
  let db: ReturnType<(typeof BACKENDS)[number]['open']>;
  let runner: DefaultRunner;
  let dashboard: Dashboard;
  let execution: PipelineExecution;

  // The items from the fourth on run until the test lets them finish, so the map stays halfway meanwhile.
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const fan = defineWorkflow({
    name: 'fan',
    tasks: [
      { id: 'list', run: (ctx) => void ctx.set('items', ITEMS) },
      {
        id: 'each',
        dependsOn: ['list'],
        map: (ctx) => ctx.get<string[]>('items') ?? [],
        run: async (_ctx, info) => {
          if (info.index! >= 3) await released;
          return `${info.item as string}!`;
        },
      },
    ],
  });

  const get = (board: Dashboard, path: string) => board.fetch(new Request(`${ORIGIN}${path}`));
  const text = async (path: string) => (await get(dashboard, path)).text();
  const instancesPath = (id: string, taskId: string) => `/api/executions/${id}/tasks/${taskId}/instances`;
  /** The DAG node of a task on the execution page, from its attributes to its `</g>` (its section has no data-status). */
  const node = (page: string, taskId: string) => {
    const at = page.indexOf(`data-task="${taskId}" data-status=`);
    return at === -1 ? '' : page.slice(at, page.indexOf('</g>', at));
  };

  beforeAll(async () => {
    db = backend.open();
    runner = await createRunner(db.config, {
      enableCronScheduling: false,
      pollIntervalMs: 20,
      maxConcurrentTasks: 8,
      workflows: [fan],
    });
    await runner.start();
    execution = await runner.executeAsync('fan');
    await waitFor(async () => {
      const each = (await runner.getExecutionResult(execution.id)).tasks.find((task) => task.taskId === 'each');
      return each?.instances?.completed === 3 && each.instances.running === 3;
    });
    dashboard = createDashboard({ client: runner });
  });

  afterAll(async () => {
    release();
    await runner?.shutdown();
    await db?.remove();
  });

  it("counts a map task's instances in the execution's JSON, which lists no instance as a task", async () => {
    const detail = (await (await get(dashboard, `/api/executions/${execution.id}`)).json()) as Loose;
    expect(detail.tasks.map((task: Loose) => [task.taskId, task.status, task.instances])).toEqual([
      ['list', 'completed', undefined],
      ['each', 'running', { total: 6, completed: 3, failed: 0, running: 3 }],
    ]);
  });

  it('lists the instances of a map task in item order, each with its item, status, attempts, times and result', async () => {
    const response = await get(dashboard, instancesPath(execution.id, 'each'));
    expect(response.status).toBe(200);
    const { instances } = (await response.json()) as Loose;
    expect(instances.map((i: Loose) => [i.index, i.item, i.status, i.attempts, i.result, i.error])).toEqual([
      [0, 'a', 'completed', 1, 'a!', null],
      [1, 'b', 'completed', 1, 'b!', null],
      [2, 'c', 'completed', 1, 'c!', null],
      [3, HOSTILE_NAME, 'running', 1, null, null],
      [4, 'e', 'running', 1, null, null],
      [5, 'f', 'running', 1, null, null],
    ]);
    for (const instance of instances) expect(Date.parse(instance.startedAt)).not.toBeNaN();
    expect(instances.map((i: Loose) => i.completedAt === null)).toEqual([false, false, false, true, true, true]);
  });

  it('pages the instances: 100 by default, limit and offset or page as on the other lists', async () => {
    const indexes = async (query: string) => {
      const body = (await (await get(dashboard, `${instancesPath(execution.id, 'each')}${query}`)).json()) as Loose;
      return [body.instances.map((i: Loose) => i.index), body.limit, body.offset];
    };
    expect(await indexes('')).toEqual([[0, 1, 2, 3, 4, 5], 100, 0]);
    expect(await indexes('?limit=2&offset=3')).toEqual([[3, 4], 2, 3]);
    expect(await indexes('?limit=4&page=2')).toEqual([[4, 5], 4, 4]);
    const bad = await get(dashboard, `${instancesPath(execution.id, 'each')}?limit=0`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as Loose).error.code).toBe('VALIDATION');
  });

  it('answers 404 with the error shape for an unknown execution, 400 for a NUL, and no instances for a task that does not map', async () => {
    const unknown = await get(dashboard, instancesPath(randomUUID(), 'each'));
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as Loose).error).toMatchObject({
      code: 'EXECUTION_NOT_FOUND',
      message: expect.stringContaining('No pipeline execution has id'),
    });
    expect(await (await get(dashboard, instancesPath(execution.id, 'list'))).json()).toMatchObject({ instances: [] });
    expect(await (await get(dashboard, instancesPath(execution.id, 'nothing'))).json()).toMatchObject({
      instances: [],
    });
    // A NUL, which PostgreSQL cannot store, is bad input on either database.
    const nul = await get(dashboard, instancesPath(execution.id, 'each%00'));
    expect(nul.status).toBe(400);
    expect(((await nul.json()) as Loose).error.code).toBe('VALIDATION');
  });

  it('serves the list in read-only mode, and refuses it when authorize says no', async () => {
    const readOnly = createDashboard({ client: runner, readOnly: true });
    const read = await get(readOnly, instancesPath(execution.id, 'each'));
    expect(read.status).toBe(200);
    expect(((await read.json()) as Loose).instances).toHaveLength(6);
    const locked = createDashboard({ client: runner, authorize: () => false });
    const refused = await get(locked, instancesPath(execution.id, 'each'));
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as Loose).error.code).toBe('UNAUTHORIZED');
  });

  it('draws the map task once in the DAG with its count, and links its items from its section', async () => {
    const page = await text(`/executions/${execution.id}`);
    expect(node(page, 'each')).toContain('>3/6 items · 3 running</text>');
    expect(page).not.toContain('data-task="each[');
    const section = page.slice(page.indexOf('id="task-each"'));
    expect(section).toContain(
      `<dt>Items</dt><dd data-instances>6: 3 completed, 3 running, 0 failed · <a href="${instancesPath(execution.id, 'each')}">each item (JSON)</a></dd>`,
    );
  });

  it('shows every item completed once the map is done, its results escaped on the page', async () => {
    release();
    const result = await execution.wait();
    expect(result.status).toBe('completed');
    expect(result.finalContext.each).toEqual(ITEMS.map((item) => `${item}!`));
    const page = await text(`/executions/${execution.id}`);
    expect(node(page, 'each')).toContain('>6/6 items</text>');
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;!');
    expect(page).not.toContain('<script>alert(1)');
  });
});
