import type { RunnerRow, RunnerStore } from '@orreryjs/core';
import { asc, eq, inArray, lt, sql } from 'drizzle-orm';
import { bind, parseTimestamptz } from '../codec.js';
import { type PostgresHandle, statement } from '../transaction.js';

/** Builds the runner statements once; each is named, so each connection parses it once. */
export function prepareRunnerStore({ db, tables, named }: PostgresHandle) {
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
      .prepare(named('orrery_heartbeat')),
    markStopped: db
      .update(r)
      .set({ stoppedAt: bind(r.stoppedAt, 'now') })
      .where(eq(r.id, bind(r.id, 'id')))
      .prepare(named('orrery_mark_stopped')),
    deleteSilentRunners: db
      .delete(r)
      .where(
        inArray(
          r.id,
          db
            .select({ id: r.id })
            .from(r)
            .where(lt(r.heartbeatAt, bind(r.heartbeatAt, 'before')))
            .limit(sql.placeholder('batchSize'))
            // Concurrent sweeps split the work instead of waiting on each other's rows.
            .for('update', { skipLocked: true }),
        ),
      )
      .prepare(named('orrery_delete_silent_runners')),
    selectRunners: db.select().from(r).orderBy(asc(r.startedAt), asc(r.id)).prepare(named('orrery_list_runners')),
    // Text, decoded like every other instant: drizzle's driver hands timestamptz over as the server formats it.
    selectDatabaseNow: db
      .select({ now: sql<string>`to_json(now()) #>> '{}'` })
      .from(sql`(SELECT 1) AS one`)
      .prepare(named('orrery_database_now')),
  };
}

/** {@link RunnerStore} on Postgres: each method is one statement. */
export class PostgresRunnerStore implements RunnerStore {
  readonly #q: ReturnType<typeof prepareRunnerStore>;

  /** Builds every statement for `handle`; the schema must be migrated. */
  constructor(handle: PostgresHandle) {
    this.#q = prepareRunnerStore(handle);
  }

  heartbeat(runner: Omit<RunnerRow, 'stoppedAt'>): Promise<void> {
    return statement('heartbeat', async () => {
      await this.#q.heartbeat.execute({ ...runner });
    });
  }

  markStopped(id: string, now: Date): Promise<void> {
    return statement('markStopped', async () => {
      await this.#q.markStopped.execute({ id, now });
    });
  }

  listRunners(): Promise<RunnerRow[]> {
    return statement('listRunners', () => this.#q.selectRunners.execute());
  }

  deleteSilentRunners(before: Date, batchSize: number): Promise<number> {
    return statement(
      'deleteSilentRunners',
      async () => (await this.#q.deleteSilentRunners.execute({ before, batchSize })).rowCount ?? 0,
    );
  }

  /** The server's `now()`, to the millisecond: what runners measure their clock offset against. */
  databaseNow(): Promise<Date> {
    return statement('databaseNow', async () => {
      const [row] = await this.#q.selectDatabaseNow.execute();
      return parseTimestamptz(row!.now);
    });
  }
}
