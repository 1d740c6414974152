import type { ClaimedTask, ExecutionStore, Storage } from '@orreryjs/core';
import { openPostgresStorage } from '@orreryjs/postgres-adapter';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';
import { afterEach, beforeEach, expect } from 'vitest';
import { ONE_TASK_WORKFLOW, oneTaskPipelines } from '../../../test/support/pipelines.js';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../test/support/postgres.js';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import { DefaultRunner, type DefaultRunnerConfig } from '../src/index.js';

/** A fresh database for one test file: the runner options that point at it, and how to remove it. */
export interface TestDatabase {
  config: Pick<DefaultRunnerConfig, 'database' | 'schema'>;
  /** Opens the same database directly, to look at rows the runner wrote. */
  storage(): Promise<Storage>;
  remove(): Promise<void>;
}

/** The adapters every runner behaviour is checked against. */
export const ADAPTERS: ReadonlyArray<{ name: string; open(): TestDatabase }> = [
  {
    name: 'sqlite',
    open: () => {
      const file = tempSqliteFile();
      return {
        config: { database: `sqlite:${file.filename}` },
        storage: () => openSqliteStorage({ filename: file.filename }),
        remove: async () => file.remove(),
      };
    },
  },
  {
    name: 'postgres',
    open: () => {
      const schema = freshSchemaName();
      return {
        config: { database: postgresUrl(), schema },
        storage: () => openPostgresStorage({ connectionString: postgresUrl(), schema }),
        remove: () => dropSchema(schema),
      };
    },
  },
];

/**
 * Runners on a fresh database of `adapter` for each test of the calling `describe`:
 * `open(config)` creates one from `defaults()` (read at each call, so it may use what a
 * `beforeEach` set) and `config`. After each test, `beforeShutdown` runs (to release what holds
 * a task), every runner opened shuts down within `shutdownTimeoutMs`, and must shut down
 * without an error; then the database is removed.
 */
export function runnersPerTest(
  adapter: { open(): TestDatabase },
  defaults: () => DefaultRunnerConfig,
  { shutdownTimeoutMs = 100, beforeShutdown }: { shutdownTimeoutMs?: number; beforeShutdown?: () => void } = {},
) {
  let db: TestDatabase;
  const runners: DefaultRunner[] = [];
  beforeEach(() => {
    db = adapter.open();
  });
  afterEach(async () => {
    beforeShutdown?.();
    const results = await Promise.allSettled(
      runners.splice(0).map((r) => r.shutdown({ timeoutMs: shutdownTimeoutMs })),
    );
    await db.remove();
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
  });
  return {
    /** This test's database. */
    get db(): TestDatabase {
      return db;
    },
    /** A runner on this test's database; shut down after the test. */
    open: async (config: DefaultRunnerConfig = {}): Promise<DefaultRunner> => {
      const runner = await DefaultRunner.create({ ...db.config, ...defaults(), ...config });
      runners.push(runner);
      return runner;
    },
  };
}

/** Resolves when `condition` holds, checking every 10 ms; rejects after `timeoutMs`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Resolves when `signal` aborts: for tasks that hold their slot until they are told to stop. */
export function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** A promise with its resolve function, for tasks that block until a test lets them go. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Creates `count` pipelines of a one-task workflow straight in the store and claims them all for `runnerId`, as a claim loop would. */
export async function claimedOneTaskPipelines(
  store: ExecutionStore,
  count: number,
  { runnerId, leaseMs, now }: { runnerId: string; leaseMs: number; now: Date },
): Promise<ClaimedTask[]> {
  await store.createPipelines(oneTaskPipelines(count, now));
  return store.claimTasks({ runnerId, registered: [ONE_TASK_WORKFLOW], limit: count, leaseMs, now });
}
