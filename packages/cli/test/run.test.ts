import { once } from 'node:events';
import type { PipelineResult } from '@orreryjs/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectOneLineError, FIXTURE_WORKFLOWS, orrery, orreryJson, startOrrery } from './support/cli.js';
import { migratedSqliteDatabase, registerFixtureWorkflows } from './support/database.js';

const database = migratedSqliteDatabase();
afterAll(() => database.remove());
const env = { ORRERY_DATABASE_URL: database.url };
const run = (args: string[]) => orrery(args, { env });
const json = <T>(args: string[]) => orreryJson<T>(args, { env });
beforeAll(() => registerFixtureWorkflows(database.url));

describe('orrery run', () => {
  it('starts a pipeline with a context, once per idempotency key, without waiting', () => {
    const args = ['run', 'report', '--context', '{"batch":7}', '--idempotency-key', 'batch-7'];
    const first = json<{ executionId: string; status: string }>(args);
    expect(first).toMatchObject({ workflowName: 'report', status: 'pending' });
    expect(json<{ executionId: string }>(args).executionId).toBe(first.executionId);
    const shown = json<PipelineResult>(['executions', 'show', first.executionId]);
    expect(shown).toMatchObject({ status: 'pending', workflowName: 'report' });
    const text = run(['run', 'ping']);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^Started execution \S+ of workflow "ping": it is queued for a worker\.\n$/);
  });

  it('refuses an unknown workflow with CLI advice, and a context that is not a JSON object', () => {
    const line = expectOneLineError(run(['run', 'reprot']), 1, '"reprot"');
    expect(line).toContain('orrery workflows');
    expectOneLineError(run(['run', 'report', '--context', '[1]']), 2, 'JSON object');
  });

  it('--wait prints the result a worker produced; exit 1 when it failed', async () => {
    const worker = startOrrery(['worker', FIXTURE_WORKFLOWS, '--no-cron', '--log-level', 'warn'], { env });
    try {
      const done = json<PipelineResult>(['run', 'report', '--wait', '--timeout', '60s']);
      expect(done).toMatchObject({ workflowName: 'report', status: 'completed' });
      const failed = run(['run', 'flaky', '--wait']);
      expect(failed.status).toBe(1);
      expect(failed.stdout).toMatch(
        /workflow "flaky" failed in .*no retry for this one\. Details: orrery executions show /,
      );
    } finally {
      // Stopped before the next test, so that no worker runs the pipelines it starts.
      const exited = once(worker, 'exit');
      worker.kill('SIGTERM');
      await exited;
    }
  });
});

describe('orrery executions cancel, pause, resume', () => {
  it('pauses, resumes and cancels a pending execution, and says when there is nothing to do', () => {
    const { executionId } = json<{ executionId: string }>(['run', 'report']);
    expect(json(['executions', 'pause', executionId, '--reason', 'maintenance'])).toEqual({
      executionId,
      status: 'paused',
    });
    expect(run(['executions', 'resume', executionId]).stdout).toMatch(
      /^Resumed execution \S+: it is now (pending|running)\.\n$/,
    );
    expect(run(['executions', 'cancel', executionId]).stdout).toBe(
      `Cancelled execution ${executionId}: it is now cancelled.\n`,
    );
    expect(run(['executions', 'pause', executionId]).stdout).toBe(
      `Execution ${executionId} is cancelled: nothing to pause.\n`,
    );
    expectOneLineError(run(['executions', 'cancel', 'nope']), 1, 'orrery executions list');
  });
});
