import { describe, expect, it } from 'vitest';
import { defineWorkflow, type TaskAttempt } from '../src/index.js';
import { ADAPTERS, runnersPerTest, untilAborted, waitFor } from './support.js';

/** Attempt 1 runs past its timeout, attempt 2 throws, attempt 3 completes. */
const timing = defineWorkflow({
  name: 'timing',
  tasks: [
    {
      id: 'flaky',
      timeoutMs: 100,
      retry: { maxAttempts: 3, initialDelayMs: 5 },
      run: async (_ctx, info) => {
        if (info.attempt === 1) await untilAborted(info.signal);
        if (info.attempt === 2) throw new Error('boom');
      },
    },
  ],
});

/** Attempt 1 holds its slot until aborted (by a shutdown); later attempts complete at once. */
let holding = false;
const held = defineWorkflow({
  name: 'held',
  tasks: [
    {
      id: 'hold',
      run: async (_ctx, info) => {
        if (info.attempt > 1) return;
        holding = true;
        await untilAborted(info.signal);
      },
    },
  ],
});

/** The history without its instants, which only have to be ordered. */
function outline(history: readonly TaskAttempt[]) {
  for (const attempt of history) expect(attempt.endedAt.getTime()).toBeGreaterThanOrEqual(attempt.startedAt.getTime());
  return history.map(({ startedAt: _s, endedAt: _e, ...rest }) => rest);
}

describe.each(ADAPTERS)('attempt history on $name', (adapter) => {
  const runners = runnersPerTest(adapter, () => ({ workflows: [timing, held], pollIntervalMs: 20 }));

  it('lists a timed-out attempt, a failed one with its error and the completing one, each with its runner', async () => {
    const runner = await runners.open({ runnerId: 'solo' });
    await runner.start();
    const result = await runner.execute('timing', {});
    expect(result.status).toBe('completed');
    const expected = [
      { attempt: 1, runnerId: 'solo', outcome: 'timed_out', error: 'Task "flaky" timed out after 100 ms' },
      // The message, then the stack frames, as TaskResult.error holds them.
      { attempt: 2, runnerId: 'solo', outcome: 'failed', error: expect.stringMatching(/^boom\n\s+at /) },
      { attempt: 3, runnerId: 'solo', outcome: 'completed' },
    ];
    expect(outline(result.tasks[0]!.attemptHistory)).toEqual(expected);
    // Read back from the database, as another process would see it.
    const stored = await runner.getExecutionResult(result.executionId);
    expect(outline(stored.tasks[0]!.attemptHistory)).toEqual(expected);
    expect(stored.tasks[0]!.attemptHistory).toEqual(result.tasks[0]!.attemptHistory);
  });

  it('lists an attempt given back at shutdown as released by its runner, then the one that completed it', async () => {
    holding = false;
    const first = await runners.open({ runnerId: 'first' });
    await first.start();
    const execution = await first.executeAsync('held', {});
    await waitFor(() => holding);
    await first.shutdown({ timeoutMs: 10 });
    const second = await runners.open({ runnerId: 'second' });
    await second.start();
    await waitFor(async () => (await second.getExecutionStatus(execution.id)) === 'completed');
    const result = await second.getExecutionResult(execution.id);
    expect(outline(result.tasks[0]!.attemptHistory)).toEqual([
      { attempt: 1, runnerId: 'first', outcome: 'released' },
      { attempt: 2, runnerId: 'second', outcome: 'completed' },
    ]);
  });
});
