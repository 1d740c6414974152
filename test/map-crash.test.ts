import { describe, expect, it } from 'vitest';
import { useCrashFleet } from './support/crash-fleet.js';
import { stopWorker, until } from './support/processes.js';

const ITEMS = 150;
const PIPELINES = 3;

describe('a map across kill -9 of one of its two runners', () => {
  const fleet = useCrashFleet();

  it('loses no result and runs an item twice only when its runner died', { timeout: 180_000 }, async () => {
    const { client, spawn, read } = await fleet.open();
    const [victim, survivor] = ['map-victim', 'map-survivor'].map((id) => spawn('map-worker.ts', [id]));
    await Promise.all([victim!.ready, survivor!.ready]);

    const executions = [];
    for (let n = 0; n < PIPELINES; n += 1) executions.push(await client.executeAsync('fan', { n: ITEMS }));
    // A random point in the middle of the maps: some instances done, some running on the victim.
    const killAfter = Math.floor(ITEMS * (0.3 + Math.random() * 1.5));
    await until(
      `${killAfter} instances ended`,
      read,
      (rows) => rows.filter((r) => r.task_id === 'each' && r.event === 'end').length >= killAfter,
    );
    await stopWorker(victim!, 'SIGKILL');
    await spawn('map-worker.ts', ['map-replacement']).ready;

    const results = await Promise.all(executions.map((execution) => execution.wait({ timeoutMs: 120_000 })));
    expect(results.map((result) => result.status)).toEqual(Array(PIPELINES).fill('completed'));
    const doubled = Array.from({ length: ITEMS }, (_, i) => i * 2);
    for (const result of results) {
      // Every item's result, once, in item order.
      expect(result.finalContext.each).toEqual(doubled);
      expect(result.finalContext.sum).toBe(doubled.reduce((a, b) => a + b, 0));
      expect(result.tasks.find((t) => t.taskId === 'each')?.instances).toEqual({
        total: ITEMS,
        completed: ITEMS,
        failed: 0,
        running: 0,
      });
    }
    const rows = await read();
    for (const execution of executions) {
      const starts = rows
        .filter((r) => r.execution_id === execution.id && r.event === 'start')
        .sort((a, b) => a.at.getTime() - b.at.getTime());
      for (let index = 0; index < ITEMS; index += 1) {
        const runs = starts.filter((r) => r.task_id === 'each' && r.label === String(index));
        expect(runs.length, `item ${index} ran`).toBeGreaterThanOrEqual(1);
        // A second run only takes over from an attempt the kill cut short.
        if (runs.length > 1) expect(runs.slice(0, -1).every((r) => r.runner_id === 'map-victim')).toBe(true);
      }
      const sums = starts.filter((r) => r.task_id === 'sum');
      if (sums.length > 1) expect(sums.slice(0, -1).every((r) => r.runner_id === 'map-victim')).toBe(true);
    }
    // The kill landed mid-map: the victim ran instances, and so did the runners after it.
    expect(rows.some((r) => r.runner_id === 'map-victim' && r.task_id === 'each')).toBe(true);
    expect(rows.some((r) => r.runner_id !== 'map-victim' && r.task_id === 'each')).toBe(true);
  });
});
