import type { RunnerRow, RunnerStore } from '@orreryjs/core';
import { asc, eq, inArray, lt, sql } from 'drizzle-orm';
import { bind } from '../codec.js';
import { readTransaction, type SqliteHandle, writeTransaction } from '../transaction.js';

/** Prepares the runner statements once on the connection. */
export function prepareRunnerStore({ db, tables }: SqliteHandle) {
  const r = tables.runners;
  const row = {
    id: bind(r.id, 'id'),
    hostname: bind(r.hostname, 'hostname'),
    pid: bind(r.pid, 'pid'),
    workflows: bind(r.workflows, 'workflows'),
    startedAt: bind(r.startedAt, 'startedAt'),
    heartbeatAt: bind(r.heartbeatAt, 'heartbeatAt'),
  };
  return {
    heartbeat: db
      .insert(r)
      .values(row)
      .onConflictDoUpdate({
        target: r.id,
        set: {
          hostname: sql`excluded.hostname`,
          pid: sql`excluded.pid`,
          workflows: sql`excluded.workflows`,
          startedAt: sql`excluded.started_at`,
          heartbeatAt: sql`excluded.heartbeat_at`,
          stoppedAt: null,
        },
      })
      .prepare(),
    markStopped: db
      .update(r)
      .set({ stoppedAt: bind(r.stoppedAt, 'now') })
      .where(eq(r.id, bind(r.id, 'id')))
      .prepare(),
    deleteSilentRunners: db
      .delete(r)
      .where(
        inArray(
          r.id,
          db
            .select({ id: r.id })
            .from(r)
            .where(lt(r.heartbeatAt, bind(r.heartbeatAt, 'before')))
            .limit(sql.placeholder('batchSize')),
        ),
      )
      .prepare(),
    selectRunners: db.select().from(r).orderBy(asc(r.startedAt), asc(r.id)).prepare(),
  };
}

/** {@link RunnerStore} on SQLite. */
export class SqliteRunnerStore implements RunnerStore {
  readonly #handle: SqliteHandle;
  readonly #q: ReturnType<typeof prepareRunnerStore>;

  /** Prepares every statement on `handle`; the schema must be migrated. */
  constructor(handle: SqliteHandle) {
    this.#handle = handle;
    this.#q = prepareRunnerStore(handle);
  }

  heartbeat(runner: Omit<RunnerRow, 'stoppedAt'>): Promise<void> {
    return writeTransaction(this.#handle, 'heartbeat', () => {
      this.#q.heartbeat.run({ ...runner });
    });
  }

  markStopped(id: string, now: Date): Promise<void> {
    return writeTransaction(this.#handle, 'markStopped', () => {
      this.#q.markStopped.run({ id, now });
    });
  }

  listRunners(): Promise<RunnerRow[]> {
    return readTransaction(this.#handle, 'listRunners', () => this.#q.selectRunners.all());
  }

  deleteSilentRunners(before: Date, batchSize: number): Promise<number> {
    return writeTransaction(
      this.#handle,
      'deleteSilentRunners',
      () => this.#q.deleteSilentRunners.run({ before, batchSize }).changes,
    );
  }

  /** SQLite has no server clock: the file is local, so this host's clock is the database's. */
  databaseNow(): Promise<Date> {
    return Promise.resolve(new Date());
  }
}
