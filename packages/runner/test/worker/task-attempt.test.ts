import {
  type ClaimedTask,
  defineWorkflow,
  type ExecutionStore,
  type PipelineRow,
  type Storage,
  silentLogger,
  systemClock,
  type TaskDefinition,
  type TaskRow,
} from '@orreryjs/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ONE_TASK_WORKFLOW, oneTaskPipelines } from '../../../../test/support/pipelines.js';
import { tempSqliteStorage } from '../../../../test/support/sqlite.js';
import type { RunnerEvents } from '../../src/events.js';
import { WorkflowRegistry } from '../../src/registry.js';
import { ActiveTasks } from '../../src/worker/active-tasks.js';
import { MapInputs } from '../../src/worker/map-inputs.js';
import { RateGate } from '../../src/worker/rate-gate.js';
import { type AttemptEnvironment, startAttempt } from '../../src/worker/task-attempt.js';
import { claimedOneTaskPipelines, gate, untilAborted } from '../support.js';

const RUNNER_ID = 'attempt-test';
const LEASE_MS = 30_000;

describe('a task attempt', () => {
  let storage: Storage;
  let remove: () => Promise<void>;
  /** Every event the attempts emitted, in order. */
  let events: Array<[keyof RunnerEvents, unknown]>;
  let finished: Array<{ row: PipelineRow; tasks: readonly TaskRow[] | null }>;
  /** The times the attempts asked the claim loop to wake at (undefined: now). */
  let wakes: Array<number | undefined>;

  beforeEach(async () => {
    ({ storage, remove } = await tempSqliteStorage());
    events = [];
    finished = [];
    wakes = [];
  });
  afterEach(() => remove());

  /** An environment running the one-task workflow `w` whose task `t` is `task`, committing each outcome alone (no claim loop). */
  const environment = (task: Omit<TaskDefinition, 'id'>, taskTimeoutMs = 60_000): AttemptEnvironment => {
    const registry = new WorkflowRegistry();
    registry.add(defineWorkflow({ name: 'w', tasks: [{ id: 't', ...task }] }));
    const store = storage.executions;
    return {
      store,
      registry,
      active: new ActiveTasks(),
      runnerId: RUNNER_ID,
      taskTimeoutMs,
      maxContextBytes: 1_048_576,
      clock: systemClock,
      logger: silentLogger,
      emit: (event, payload) => events.push([event, payload]),
      pipelineFinished: (row, tasks) => finished.push({ row, tasks }),
      wake: (atMs) => wakes.push(atMs),
      outcomeReady: () => {},
      rateGate: new RateGate(store),
      mapInputs: new MapInputs(store),
      finish: async (request) => (await store.finishTasks([request])).finished[0]!,
      slotFreed: () => {},
    };
  };
  const claimOne = async (): Promise<ClaimedTask> => {
    const [claimed] = await claimedOneTaskPipelines(storage.executions, 1, {
      runnerId: RUNNER_ID,
      leaseMs: LEASE_MS,
      now: new Date(),
    });
    return claimed!;
  };
  const taskRow = async (claimed: ClaimedTask) => (await storage.executions.listTasks(claimed.pipeline.id))[0]!;

  it('runs the code, commits its output and ends the pipeline, telling the runner without a read', async () => {
    const env = environment({
      run: async (context) => {
        context.set('greeting', 'hello');
      },
    });
    const claimed = await claimOne();
    await startAttempt(claimed, env).done;
    const row = await taskRow(claimed);
    expect(row).toMatchObject({ status: 'completed', output: { set: { greeting: 'hello' } }, leaseOwner: null });
    expect(events.map(([event]) => event)).toEqual(['task:started', 'task:completed']);
    expect(finished).toHaveLength(1);
    expect(finished[0]!.row.status).toBe('completed');
    expect(finished[0]!.tasks?.map((task) => [task.taskId, task.status, task.output])).toEqual([
      ['t', 'completed', row.output],
    ]);
    expect(env.active.size).toBe(0);
  });

  it('completes a wait task with the signal its claim brought, reading it in no transaction of its own', async () => {
    const env = environment({ waitFor: { signal: 'go' } });
    const now = new Date();
    const [pipeline] = oneTaskPipelines(1, now);
    await storage.executions.createPipeline({ ...pipeline!, tasks: [{ ...pipeline!.tasks[0]!, waitSignal: 'go' }] });
    await storage.executions.sendSignal({ executionId: pipeline!.id, name: 'go', payload: { by: 'ada' }, now });
    const [claimed] = await storage.executions.claimTasks({
      runnerId: RUNNER_ID,
      registered: [ONE_TASK_WORKFLOW],
      limit: 1,
      leaseMs: LEASE_MS,
      now,
    });
    expect(claimed!.signal).toEqual({ payload: { by: 'ada' } });
    const reads: unknown[] = [];
    const store = Object.create(storage.executions) as ExecutionStore;
    store.waitForSignal = (request) => {
      reads.push(request);
      return storage.executions.waitForSignal(request);
    };
    await startAttempt(claimed!, { ...env, store }).done;
    expect(reads).toEqual([]);
    const row = await taskRow(claimed!);
    expect(row).toMatchObject({ status: 'completed', attempt: 1, output: { set: { t: { by: 'ada' } } } });
    expect(events.map(([event]) => event)).toEqual(['task:completed']);
  });

  it('commits a retry for a failure the policy retries, and asks to be woken when its back-off ends', async () => {
    const env = environment({
      retry: { maxAttempts: 3, backoff: 'fixed', initialDelayMs: 60_000 },
      run: async () => {
        throw new Error('flaky');
      },
    });
    const claimed = await claimOne();
    await startAttempt(claimed, env).done;
    const row = await taskRow(claimed);
    expect(row.status).toBe('ready');
    expect(row.error).toMatch(/^flaky/);
    expect(row.availableAt!.getTime()).toBeGreaterThan(Date.now() + 30_000);
    expect(wakes).toEqual([row.availableAt!.getTime()]);
    const [, failed] = events.find(([event]) => event === 'task:failed')!;
    expect(failed).toMatchObject({ willRetry: true, retryAt: row.availableAt });
    expect(finished).toEqual([]);
  });

  it('fails an attempt whose code throws before returning as it fails one whose promise rejects', async () => {
    // The code is called in the turn that starts the attempt: a synchronous throw must not escape it.
    const outcomes = [];
    for (const run of [
      () => {
        throw new Error('broken at once');
      },
      async () => {
        throw new Error('broken at once');
      },
    ]) {
      events = [];
      const env = environment({ retry: { maxAttempts: 1 }, run });
      const claimed = await claimOne();
      await startAttempt(claimed, env).done;
      const row = await taskRow(claimed);
      outcomes.push({
        status: row.status,
        error: row.error?.split('\n')[0],
        history: row.attemptHistory?.map((entry) => entry.outcome),
        events: events.map(([event]) => event),
        active: env.active.size,
        // A limit left running would abort nothing, but its timer would keep the process alive.
        timeLimitsRunning: env.active.timeLimitsRunning,
      });
    }
    expect(outcomes[0]).toEqual({
      status: 'failed',
      error: 'broken at once',
      history: ['failed'],
      events: ['task:started', 'task:failed'],
      active: 0,
      timeLimitsRunning: 0,
    });
    expect(outcomes[1]).toEqual(outcomes[0]);
  });

  it('fails an attempt that outlives its time limit, even when its code ignores the signal', async () => {
    const env = environment({ timeoutMs: 50, retry: { maxAttempts: 1 }, run: () => new Promise(() => {}) });
    const claimed = await claimOne();
    await startAttempt(claimed, env).done;
    const row = await taskRow(claimed);
    expect(row.status).toBe('failed');
    expect(row.error).toMatch(/timed out after 50 ms/);
    expect(row.attemptHistory?.map((entry) => entry.outcome)).toEqual(['timed_out']);
    expect(finished.map(({ row: pipeline }) => pipeline.status)).toEqual(['failed']);
    expect(env.active.timeLimitsRunning).toBe(0);
  });

  it('commits nothing for an attempt aborted by a cancel: the cancel already wrote its row', async () => {
    const env = environment({ run: (_context, info) => untilAborted(info.signal) });
    const claimed = await claimOne();
    const entry = startAttempt(claimed, env);
    await storage.executions.cancelPipeline(claimed.pipeline.id, new Date());
    env.active.abortPipeline(claimed.pipeline.id, 'cancelled');
    await entry.done;
    expect((await taskRow(claimed)).status).toBe('cancelled');
    expect(events.map(([event]) => event)).toEqual(['task:started']);
    expect(finished).toEqual([]);
  });

  it('never runs two attempts of one task at once: a second claim aborts the first and starts once it has settled', async () => {
    const firstRunning = gate();
    const order: string[] = [];
    let runs = 0;
    const env = environment({
      run: async (_context, info) => {
        runs += 1;
        order.push(`run ${runs} starts`);
        if (runs === 1) {
          firstRunning.open();
          await untilAborted(info.signal);
        }
      },
    });
    const claimed = await claimOne();
    const first = startAttempt(claimed, env);
    void first.done.then(() => order.push('attempt 1 settled'));
    await firstRunning.promise;
    // The same task claimed again (its lease given back, then taken by this process): same row, next attempt.
    await storage.executions.releaseLeases(RUNNER_ID, [first], new Date());
    const [again] = await storage.executions.claimTasks({
      runnerId: RUNNER_ID,
      registered: [{ workflowName: 'w', taskIds: ['t'] }],
      limit: 1,
      leaseMs: LEASE_MS,
      now: new Date(),
    });
    const second = startAttempt(again!, env);
    await second.done;
    expect(order).toEqual(['run 1 starts', 'attempt 1 settled', 'run 2 starts']);
    expect(first.abortCause).not.toBeNull();
    expect((await taskRow(claimed)).status).toBe('completed');
  });
});
