import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { newId } from '@orreryjs/core';
import { afterEach, describe, expect, it } from 'vitest';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import { openSqliteStorage } from '../src/index.js';

const WORKER = fileURLToPath(new URL('./fixtures/claim-worker.ts', import.meta.url));
const removals: Array<() => void> = [];
afterEach(() => {
  for (const remove of removals.splice(0)) remove();
});

/** Starts one worker per argument list, releases them together once all are up, and returns what each claimed. */
async function spawnWorkers(args: string[][]): Promise<string[][]> {
  const workers = args.map((rest) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', WORKER, ...rest], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { child, lines, exited };
  });
  for (const { lines } of workers) expect((await lines.next()).value).toBe('ready');
  for (const { child } of workers) child.stdin.end('go\n');
  return Promise.all(
    workers.map(async ({ lines, exited }) => {
      const result = (await lines.next()).value as string;
      expect(await exited).toBe(0);
      return JSON.parse(result) as string[];
    }),
  );
}

describe('several processes on one file', () => {
  it('lets processes opening a fresh file together all migrate it without error', async () => {
    const file = tempSqliteFile();
    removals.push(file.remove);
    const results = await spawnWorkers(Array.from({ length: 6 }, () => [file.filename]));
    expect(results).toEqual(Array.from({ length: 6 }, () => []));
  });

  it('never hands the same task to two processes claiming at once', async () => {
    const file = tempSqliteFile();
    removals.push(file.remove);
    const storage = await openSqliteStorage({ filename: file.filename });
    const now = new Date('2029-01-01T00:00:00Z');
    for (let i = 0; i < 300; i++) {
      await storage.executions.createPipeline({
        id: newId(),
        workflowName: 'wf',
        workflowVersion: 'v1',
        input: {},
        idempotencyKey: null,
        scheduledTime: null,
        now,
        tasks: [{ id: newId(), taskId: 'only', position: 0, pendingDeps: 0 }],
      });
    }
    const claims = await spawnWorkers([
      [file.filename, 'wf', 'runner-a'],
      [file.filename, 'wf', 'runner-b'],
      [file.filename, 'wf', 'runner-c'],
    ]);
    const all = claims.flat();
    expect(all).toHaveLength(300);
    expect(new Set(all).size).toBe(300);
    const pipelines = await storage.executions.listPipelines({ limit: 1000, offset: 0 });
    expect(pipelines.every((pipeline) => pipeline.status === 'completed')).toBe(true);
    await storage.close();
  });
});
