import type { PipelineResult } from '@orreryjs/core';
import { DefaultRunner, defineWorkflow, type PipelineExecution } from '@orreryjs/runner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../../test/support/processes.js';
import type { TaskNode } from '../src/task-tree.js';
import { orrery, orreryJson } from './support/cli.js';
import { TEST_DATABASES } from './support/database.js';

type ShownExecution = Omit<PipelineResult, 'tasks'> & { tasks: TaskNode[] };

/**
 * `orrery executions show` of a pipeline with a map task, against a real runner that holds the
 * map halfway (three items done, three running): the CLI, another process, draws the task once
 * with its instance counts, never one line per item.
 */
describe.each(TEST_DATABASES)('orrery executions show of a map task on $name', (backend) => {
  const db = backend.open();
  const run = (args: string[]) => orrery(args, { env: db.env });
  const json = <T>(args: string[]) => orreryJson<T>(args, { env: db.env });

  // Items d, e and f run until the test lets them finish, so the map stays halfway meanwhile.
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const fan = defineWorkflow({
    name: 'fan',
    tasks: [
      { id: 'list', run: (ctx) => void ctx.set('letters', ['a', 'b', 'c', 'd', 'e', 'f']) },
      {
        id: 'each',
        dependsOn: ['list'],
        map: (ctx) => ctx.get<string[]>('letters') ?? [],
        run: async (_ctx, info) => {
          if (info.index! >= 3) await released;
          return (info.item as string).toUpperCase();
        },
      },
      {
        id: 'total',
        dependsOn: ['each'],
        run: (ctx) => void ctx.set('total', (ctx.get<string[]>('each') ?? []).length),
      },
    ],
  });

  let runner: DefaultRunner;
  let execution: PipelineExecution;

  beforeAll(async () => {
    runner = await DefaultRunner.create({
      database: db.database,
      ...(db.schema === undefined ? {} : { schema: db.schema }),
      workflows: [fan],
      enableCronScheduling: false,
      pollIntervalMs: 20,
      maxConcurrentTasks: 8,
    });
    await runner.start();
    execution = await runner.executeAsync('fan');
    await until(
      'the map is halfway',
      async () => (await runner.getExecutionResult(execution.id)).tasks.find((task) => task.taskId === 'each'),
      (each) => each?.instances?.completed === 3 && each.instances.running === 3,
    );
  });
  afterAll(async () => {
    release();
    await runner?.shutdown();
    await db.remove();
  });

  it('draws the map task once, with its items by status, and no line per item', () => {
    const shown = run(['executions', 'show', execution.id]);
    expect(shown.status).toBe(0);
    expect(shown.stdout).toMatch(/\nlist +completed +1 +\S+\n/);
    expect(shown.stdout).toMatch(/\n└── each +running +1 +- +items 6: 3 completed, 3 running, 0 failed\n/);
    expect(shown.stdout).toMatch(/\n {4}└── total +not_started +0 +-\n/);
    expect(shown.stdout).not.toContain('each[');
  });

  it("gives JSON the map task's instance counts, and its instances no task of their own", () => {
    const shown = json<ShownExecution>(['executions', 'show', execution.id]);
    expect(shown.tasks.map((task) => [task.taskId, task.status, task.dependsOn])).toEqual([
      ['list', 'completed', []],
      ['each', 'running', ['list']],
      ['total', 'not_started', ['each']],
    ]);
    expect(shown.tasks[1]!.instances).toEqual({ total: 6, completed: 3, failed: 0, running: 3 });
    expect(shown.tasks[0]!.instances).toBeUndefined();
  });

  it('shows every item completed once the map is done, and the results gathered in item order', async () => {
    release();
    const result = await execution.wait();
    expect(result.status).toBe('completed');
    const shown = run(['executions', 'show', execution.id]);
    expect(shown.stdout).toMatch(/\n└── each +completed +1 +\S+ +items 6: 6 completed, 0 running, 0 failed\n/);
    const finished = json<ShownExecution>(['executions', 'show', execution.id]);
    expect(finished.finalContext).toMatchObject({ each: ['A', 'B', 'C', 'D', 'E', 'F'], total: 6 });
    expect(finished.tasks[1]!.instances).toEqual({ total: 6, completed: 6, failed: 0, running: 0 });
  });
});
