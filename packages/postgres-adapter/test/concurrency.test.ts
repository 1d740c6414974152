import { type ClaimedTask, type NewPipeline, newId, type Storage, type TaskOutcome } from '@orreryjs/core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../test/support/postgres.js';
import { openPostgresStorage } from '../src/index.js';

const schema = freshSchemaName();
let storages: Storage[] = [];
beforeAll(async () => {
  // Separate pools: as separate runner processes would, they share nothing but the database.
  storages = await Promise.all(
    Array.from({ length: 3 }, () => openPostgresStorage({ connectionString: postgresUrl(), schema, pool: { max: 4 } })),
  );
});
afterAll(async () => {
  for (const storage of storages) await storage.close();
  await dropSchema(schema);
});

const NOW = new Date('2030-01-01T00:00:00.000Z');

/** Resolves once `condition` holds, checking every 5 ms; rejects after 10 s. */
async function waitUntil(condition: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error('condition not met within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
/** Resolves once another session waits for a lock that `client`'s open transaction holds. */
function untilItBlocksAnother(client: pg.Client): Promise<void> {
  return waitUntil(async () => {
    const { rows } = await client.query(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))',
    );
    return rows[0].n > 0;
  });
}

const completed: TaskOutcome = { status: 'completed', output: { set: {}, deleted: [] } };

/** A pipeline of workflow `workflowName` whose tasks depend on each other as `dag` says. */
function pipeline(workflowName: string, dag: Record<string, string[]>): NewPipeline {
  return {
    id: newId(),
    workflowName,
    workflowVersion: 'v1',
    input: {},
    idempotencyKey: null,
    scheduledTime: null,
    now: NOW,
    tasks: Object.entries(dag).map(([taskId, deps], position) => ({
      id: newId(),
      taskId,
      position,
      pendingDeps: deps.length,
    })),
  };
}

async function finish(storage: Storage, claimed: ClaimedTask, dependents: string[]) {
  const request = {
    runnerId: claimed.task.leaseOwner!,
    taskExecutionId: claimed.task.id,
    pipelineExecutionId: claimed.task.pipelineExecutionId,
    taskId: claimed.task.taskId,
    attempt: claimed.task.attempt,
    outcome: completed,
    dependents,
    now: NOW,
  };
  return (await storage.executions.finishTasks([request])).finished[0]!;
}

describe('several pools on one schema', () => {
  it('never hands one task to two claimers: every task of the pool is claimed exactly once', async () => {
    const workflowName = `wf_${newId().slice(0, 8)}`;
    const created = Array.from({ length: 300 }, () => pipeline(workflowName, { only: [] }));
    for (const p of created) await storages[0]!.executions.createPipeline(p);
    const registered = [{ workflowName, taskIds: ['only'] }];
    // Two claim loops per storage, each claiming small batches and finishing what it got, until nothing is left.
    const loop = async (storage: Storage, runnerId: string) => {
      const claimed: string[] = [];
      for (;;) {
        const batch = await storage.executions.claimTasks({
          runnerId,
          registered,
          limit: 5,
          leaseMs: 600_000,
          now: NOW,
        });
        if (batch.length === 0) return claimed;
        for (const task of batch) {
          claimed.push(task.task.id);
          expect((await finish(storage, task, [])).accepted).toBe(true);
        }
      }
    };
    const claims = await Promise.all(
      storages.flatMap((storage, i) => [loop(storage, `r${i}a`), loop(storage, `r${i}b`)]),
    );
    const all = claims.flat();
    expect(all).toHaveLength(300);
    expect(new Set(all).size).toBe(300);
    const pipelines = await storages[0]!.executions.listPipelines({ workflowName, limit: 1000, offset: 0 });
    expect(pipelines.every((row) => row.status === 'completed')).toBe(true);
  });

  it('readies each fan-in child exactly once when its two parents finish at the same moment on two pools', async () => {
    const workflowName = `wf_${newId().slice(0, 8)}`;
    const dag = { a: [], b: [], c: ['a', 'b'] };
    const created = Array.from({ length: 40 }, () => pipeline(workflowName, dag));
    for (const p of created) await storages[0]!.executions.createPipeline(p);
    const registered = [{ workflowName, taskIds: ['a', 'b', 'c'] }];
    const parents = await storages[0]!.executions.claimTasks({
      runnerId: 'r1',
      registered,
      limit: 100,
      leaseMs: 600_000,
      now: NOW,
    });
    expect(parents).toHaveLength(80);
    const results = await Promise.all(
      parents.map((claimed) => finish(storages[claimed.task.taskId === 'a' ? 1 : 2]!, claimed, ['c'])),
    );
    expect(results.every((result) => result.accepted)).toBe(true);
    expect(results.reduce((sum, result) => sum + result.readied, 0)).toBe(40);
    for (const p of created) {
      const [, , child] = await storages[0]!.executions.listTasks(p.id);
      expect(child).toMatchObject({ status: 'ready', pendingDeps: 0 });
    }
  });

  it('ends a pipeline exactly once when its last two tasks finish at the same moment on two pools', async () => {
    const workflowName = `wf_${newId().slice(0, 8)}`;
    const created = Array.from({ length: 40 }, () => pipeline(workflowName, { a: [], b: [] }));
    for (const p of created) await storages[0]!.executions.createPipeline(p);
    const registered = [{ workflowName, taskIds: ['a', 'b'] }];
    const tasks = await storages[0]!.executions.claimTasks({
      runnerId: 'r1',
      registered,
      limit: 100,
      leaseMs: 600_000,
      now: NOW,
    });
    const results = await Promise.all(
      tasks.map((claimed) => finish(storages[claimed.task.taskId === 'a' ? 1 : 2]!, claimed, [])),
    );
    const ended = results.flatMap((result) => (result.finishedPipeline === null ? [] : [result.finishedPipeline.id]));
    expect(ended.sort()).toEqual(created.map((p) => p.id).sort());
  });

  it('lets claims race cancellations without a deadlock: each pipeline ends up cancelled with no task left running', async () => {
    const workflowName = `wf_${newId().slice(0, 8)}`;
    const created = Array.from({ length: 60 }, () => pipeline(workflowName, { a: [], b: [], c: [] }));
    for (const p of created) await storages[0]!.executions.createPipeline(p);
    const registered = [{ workflowName, taskIds: ['a', 'b', 'c'] }];
    const claimAll = async (storage: Storage, runnerId: string) => {
      for (let round = 0; round < 30; round++) {
        await storage.executions.claimTasks({ runnerId, registered, limit: 4, leaseMs: 600_000, now: NOW });
      }
    };
    const cancelAll = async () => {
      for (const p of created) await storages[2]!.executions.cancelPipeline(p.id, NOW);
    };
    await Promise.all([claimAll(storages[0]!, 'r1'), claimAll(storages[1]!, 'r2'), cancelAll()]);
    for (const p of created) {
      expect(await storages[0]!.executions.getPipeline(p.id)).toMatchObject({ status: 'cancelled' });
      const tasks = await storages[0]!.executions.listTasks(p.id);
      expect(tasks.every((task) => task.status === 'cancelled' && task.leaseOwner === null)).toBe(true);
    }
  });
  it('wakes a wait task that is given back while its signal waits for the pipeline row', async () => {
    const workflowName = `wf_${newId().slice(0, 8)}`;
    const created = pipeline(workflowName, { wait: [] });
    await storages[0]!.executions.createPipeline({ ...created, tasks: [{ ...created.tasks[0]!, waitSignal: 'go' }] });
    const [claimed] = await storages[0]!.executions.claimTasks({
      runnerId: 'r',
      registered: [{ workflowName, taskIds: ['wait'] }],
      limit: 1,
      leaseMs: 60_000,
      now: NOW,
    });
    // A wait task's look, held open: the pipeline row shared, the signal not there, the task given back for good.
    const wait = new pg.Client({ connectionString: postgresUrl() });
    await wait.connect();
    try {
      await wait.query('BEGIN');
      await wait.query(`SELECT id FROM "${schema}".pipeline_executions WHERE id = $1 FOR SHARE`, [created.id]);
      await wait.query(
        `UPDATE "${schema}".task_executions SET status = 'ready', attempt = attempt - 1, available_at = '2200-01-01Z',
          lease_owner = NULL, lease_expires_at = NULL WHERE id = $1`,
        [claimed!.task.id],
      );
      const later = new Date(NOW.getTime() + 1_000);
      const sending = storages[1]!.executions.sendSignal({
        executionId: created.id,
        name: 'go',
        payload: 1,
        now: later,
      });
      // The signal waits for the row the look holds.
      await untilItBlocksAnother(wait);
      await wait.query('COMMIT');
      expect(await sending).toBe('sent');
      const [again] = await storages[2]!.executions.claimTasks({
        runnerId: 'r2',
        registered: [{ workflowName, taskIds: ['wait'] }],
        limit: 1,
        leaseMs: 60_000,
        now: later,
      });
      expect(again?.task.id).toBe(claimed!.task.id);
      expect(again?.signal).toEqual({ payload: 1 });
    } finally {
      await wait.end();
    }
  });
  it('refuses a signal that waits for the pipeline row while the execution ends, and stores nothing', async () => {
    const workflowName = `wf_${newId().slice(0, 8)}`;
    const created = pipeline(workflowName, { wait: [] });
    await storages[0]!.executions.createPipeline({ ...created, tasks: [{ ...created.tasks[0]!, waitSignal: 'go' }] });
    const ending = new pg.Client({ connectionString: postgresUrl() });
    await ending.connect();
    try {
      await ending.query('BEGIN');
      await ending.query(`UPDATE "${schema}".pipeline_executions SET status = 'cancelled' WHERE id = $1`, [created.id]);
      const sending = storages[1]!.executions.sendSignal({ executionId: created.id, name: 'go', payload: 1, now: NOW });
      await untilItBlocksAnother(ending);
      await ending.query('COMMIT');
      expect(await sending).toBe('terminal');
      const { rows } = await ending.query(
        `SELECT count(*)::int AS n FROM "${schema}".signals WHERE pipeline_execution_id = $1`,
        [created.id],
      );
      expect(rows[0].n).toBe(0);
    } finally {
      await ending.end();
    }
  });
});
