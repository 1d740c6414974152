import { describe, expect, it } from 'vitest';
import { useCrashFleet } from './support/crash-fleet.js';
import { stopWorker, until } from './support/processes.js';

/** `later`'s delay in delay-worker.ts (not imported: importing the fixture would start its runner). */
const DELAY_MS = 1_500;
const PIPELINES = 5;

describe('a durable delay across kill -9 of its runner', () => {
  const fleet = useCrashFleet();

  it('runs the delayed task once, on the runner that took over, no earlier than its delay', {
    timeout: 120_000,
  }, async () => {
    const { client, spawn, read } = await fleet.open();
    const first = spawn('delay-worker.ts', ['delay-first']);
    await first.ready;

    const executions = [];
    for (let n = 0; n < PIPELINES; n += 1) executions.push(await client.executeAsync('sleeper', { n }));
    // Every pipeline's first task done, its later task asleep: then the runner dies.
    await until(
      'every first task ended',
      read,
      (rows) => rows.filter((r) => r.task_id === 'first' && r.event === 'end').length === PIPELINES,
    );
    await stopWorker(first, 'SIGKILL');
    await spawn('delay-worker.ts', ['delay-second']).ready;

    const results = await Promise.all(executions.map((execution) => execution.wait({ timeoutMs: 60_000 })));
    expect(results.map((result) => result.status)).toEqual(Array(PIPELINES).fill('completed'));
    const rows = await read();
    for (const execution of executions) {
      const firstEnd = rows.find((r) => r.execution_id === execution.id && r.task_id === 'first' && r.event === 'end')!;
      const laterStarts = rows.filter(
        (r) => r.execution_id === execution.id && r.task_id === 'later' && r.event === 'start',
      );
      expect(laterStarts.map((r) => r.runner_id)).toEqual(['delay-second']);
      expect(laterStarts[0]!.at.getTime() - firstEnd.at.getTime()).toBeGreaterThanOrEqual(DELAY_MS);
    }
  });
});
