import { randomUUID } from 'node:crypto';
import type { PipelineResult } from '@orreryjs/core';
import { DefaultRunner, defineWorkflow, type PipelineExecution } from '@orreryjs/runner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../../test/support/processes.js';
import type { TaskNode } from '../src/task-tree.js';
import { expectOneLineError, orrery, orreryJson } from './support/cli.js';
import { TEST_DATABASES } from './support/database.js';

const HOUR = 3_600_000;

/**
 * `orrery executions signal` and `show` against a real runner that holds executions at their
 * waits: the CLI, another process, reads and signals the same database, and the runner goes on.
 */
describe.each(TEST_DATABASES)('orrery and signals on $name', (backend) => {
  const db = backend.open();
  const run = (args: string[]) => orrery(args, { env: db.env });
  const json = <T>(args: string[]) => orreryJson<T>(args, { env: db.env });

  const shipped: string[] = [];
  // request → approval (a wait task, for at most an hour) → ship.
  const order = defineWorkflow({
    name: 'order',
    tasks: [
      { id: 'request', run: () => {} },
      { id: 'approval', dependsOn: ['request'], waitFor: { signal: 'approved', timeoutMs: HOUR } },
      { id: 'ship', dependsOn: ['approval'], run: (ctx) => void shipped.push(JSON.stringify(ctx.get('approval'))) },
    ],
  });
  // A wait with no timeout: it waits as long as it takes.
  const hold = defineWorkflow({ name: 'hold', tasks: [{ id: 'gate', waitFor: { signal: 'go' } }] });

  let runner: DefaultRunner;
  let approved: PipelineExecution;
  let held: PipelineExecution;
  let refused: PipelineExecution;
  let deadline: Date;

  /** The deadline of a wait task once it waits, read through the runner. */
  async function waitsUntil(execution: PipelineExecution, taskId: string): Promise<Date | undefined> {
    const result = await runner.getExecutionResult(execution.id);
    return result.tasks.find((task) => task.taskId === taskId)?.waitsUntil;
  }

  beforeAll(async () => {
    runner = await DefaultRunner.create({
      database: db.database,
      ...(db.schema === undefined ? {} : { schema: db.schema }),
      workflows: [order, hold],
      enableCronScheduling: false,
      pollIntervalMs: 20,
    });
    await runner.start();
    approved = await runner.executeAsync('order');
    refused = await runner.executeAsync('order');
    // Ready from the start (an attempt gives it back unstarted, leaving no trace without a deadline).
    held = await runner.executeAsync('hold');
    deadline = await until('the approval waits', () => waitsUntil(approved, 'approval'), Boolean).then((at) => at!);
  });
  afterAll(async () => {
    await runner?.shutdown();
    await db.remove();
  });

  describe('orrery executions show, of a pipeline that waits for a signal', () => {
    it('marks the waiting task with its signal and deadline, or says it has none', () => {
      const shown = run(['executions', 'show', approved.id.slice(0, 8)]);
      expect(shown.status).toBe(0);
      expect(shown.stdout).toMatch(
        new RegExp(`└── approval +ready +0 +- +waiting for signal approved \\(until ${deadline.toISOString()}\\)\n`),
      );
      expect(shown.stdout).toMatch(/ {4}└── ship +not_started +0 +-\n/);
      expect(run(['executions', 'show', held.id]).stdout).toMatch(
        /\ngate +ready +0 +- +waiting for signal go \(no timeout\)\n/,
      );
    });

    it('gives JSON the signal wait of the task', () => {
      const shown = json<Omit<PipelineResult, 'tasks'> & { tasks: TaskNode[] }>(['executions', 'show', approved.id]);
      const approval = shown.tasks.find((task) => task.taskId === 'approval');
      expect(approval).toMatchObject({
        status: 'ready',
        waitsUntil: deadline.toISOString(),
        signalWait: { signal: 'approved', waitsUntil: deadline.toISOString(), timeoutMs: HOUR },
      });
      expect(shown.tasks.find((task) => task.taskId === 'ship')?.signalWait).toBeUndefined();
    });
  });

  describe('orrery executions signal', () => {
    it('refuses a payload that is not JSON as a usage error, sending nothing', async () => {
      const line = expectOneLineError(
        run(['executions', 'signal', approved.id, 'approved', '--payload', '{by: ada}']),
        2,
        "option '--payload <json>' argument '{by: ada}' is invalid. expected JSON such as",
      );
      expect(line).toContain('does not parse');
      expect(await waitsUntil(approved, 'approval')).toEqual(deadline);
    });

    it('sends the signal by id prefix with a payload: the wait completes and the pipeline goes on', async () => {
      const sent = run(['executions', 'signal', approved.id.slice(0, 8), 'approved', '--payload', '{"by":"ada"}']);
      expect(sent.status).toBe(0);
      expect(sent.stdout).toBe(`Sent signal "approved" to execution ${approved.id}.\n`);
      const result = await approved.wait();
      expect(result.status).toBe('completed');
      expect(result.finalContext.approval).toEqual({ by: 'ada' });
      expect(shipped).toEqual(['{"by":"ada"}']);
    });

    it('prints executionId, name and sent with --json; without a payload the task sets null', async () => {
      expect(json(['executions', 'signal', held.id, 'go'])).toEqual({ executionId: held.id, name: 'go', sent: true });
      const result = await held.wait();
      expect(result.status).toBe('completed');
      expect(result.finalContext.gate).toBeNull();
    });

    it('names the database for an unknown id, and gives the engine message for an ended execution', async () => {
      const id = randomUUID();
      expectOneLineError(
        run(['executions', 'signal', id, 'approved']),
        1,
        `error: No pipeline execution has id "${id}" in ${db.where}; ids are UUIDs`,
      );
      await runner.cancelExecution(refused.id);
      expectOneLineError(
        run(['executions', 'signal', refused.id, 'approved']),
        1,
        `error: Execution ${refused.id} has ended (cancelled); a signal reaches only an execution that has not.`,
      );
    });
  });
});
