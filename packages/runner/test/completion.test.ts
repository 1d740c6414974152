import { type PipelineRow, silentLogger } from '@orreryjs/core';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';
import { afterEach, describe, expect, it } from 'vitest';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import { CompletionWaiters } from '../src/completion.js';
import { DefaultRunner, defineWorkflow } from '../src/index.js';
import { gate, waitFor } from './support.js';

/*
 * Waiters with cross-process wake-ups (first poll delay 0): one read at once, then only the
 * 60 s poll, so a wake-up must never be lost, not even one arriving while a read is in flight.
 */

const POLL_MS = 60_000;
const PROMPT_MS = 15_000;

function promptly<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${PROMPT_MS} ms`)), PROMPT_MS);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const idle = defineWorkflow({ name: 'idle', tasks: [{ id: 'only', run: () => {} }] });

describe('CompletionWaiters with wake-ups', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** A pipeline nobody runs (the runner is never started), and a second handle on its database. */
  async function setUp() {
    const file = tempSqliteFile();
    cleanups.push(() => file.remove());
    const runner = await DefaultRunner.create({ database: `sqlite:${file.filename}`, workflows: [idle] });
    cleanups.push(() => runner.shutdown());
    const storage = await openSqliteStorage({ filename: file.filename });
    cleanups.push(() => storage.close());
    const execution = await runner.executeAsync('idle');
    return { runner, storage, id: execution.id };
  }

  it('reads a pipeline that ended before the wait began at once', async () => {
    const { runner, storage, id } = await setUp();
    await runner.cancelExecution(id);
    const waiters = new CompletionWaiters({
      getPipeline: (pipelineId) => storage.executions.getPipeline(pipelineId),
      pollIntervalMs: POLL_MS,
      logger: silentLogger,
    });
    cleanups.push(() => waiters.close(new Error('closed')));
    const { row } = await promptly('the wait', waiters.wait(id, 2 * POLL_MS, 0));
    expect(row.status).toBe('cancelled');
  });

  it('reads again when woken while a read is in flight, instead of waiting for the next poll', async () => {
    const { runner, storage, id } = await setUp();
    const held = gate();
    let reads = 0;
    const waiters = new CompletionWaiters({
      getPipeline: async (pipelineId): Promise<PipelineRow | null> => {
        reads += 1;
        const row = await storage.executions.getPipeline(pipelineId);
        if (reads === 1) await held.promise;
        return row;
      },
      pollIntervalMs: POLL_MS,
      logger: silentLogger,
    });
    cleanups.push(() => waiters.close(new Error('closed')));
    const waited = waiters.wait(id, 2 * POLL_MS, 0);
    await waitFor(() => reads === 1);
    // The first read saw the pipeline running; it ends now, and the wake-up arrives before that read returns.
    await runner.cancelExecution(id);
    waiters.wake(id);
    held.open();
    const { row } = await promptly('the wait', waited);
    expect(row.status).toBe('cancelled');
    expect(reads).toBe(2);
  });
});
