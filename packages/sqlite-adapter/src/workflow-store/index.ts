import type { WorkflowDefinitionRow, WorkflowInfo, WorkflowStore } from '@orreryjs/core';
import { asc, desc, eq, sql } from 'drizzle-orm';
import { bind } from '../codec.js';
import { readTransaction, type SqliteHandle, writeTransaction } from '../transaction.js';

/** Builds the workflow statements once. */
export function prepareWorkflowStore({ db, tables }: SqliteHandle) {
  const w = tables.workflows;
  return {
    list: db.select().from(w).orderBy(asc(w.name), asc(w.registeredAt), asc(w.version)).prepare(),
    latest: db
      .select()
      .from(w)
      .where(eq(w.name, bind(w.name, 'name')))
      .orderBy(desc(w.registeredAt), desc(w.version))
      .limit(1)
      .prepare(),
  };
}

/** Inserts new (name, version) rows and refreshes known ones, in one statement. */
function upsertWorkflowRows({ db, tables }: SqliteHandle, rows: readonly WorkflowDefinitionRow[], now: Date) {
  const w = tables.workflows;
  return db
    .insert(w)
    .values(rows.map((row) => ({ ...row, registeredAt: now, lastSeenAt: now })))
    .onConflictDoUpdate({
      target: [w.name, w.version],
      set: {
        description: sql`excluded.description`,
        // Raw: drizzle cannot name the existing row's column beside `excluded` in a max().
        lastSeenAt: sql`max(${sql.raw('workflows.last_seen_at')}, excluded.last_seen_at)`,
      },
    })
    .run();
}

/** {@link WorkflowStore} on SQLite. */
export class SqliteWorkflowStore implements WorkflowStore {
  readonly #handle: SqliteHandle;
  readonly #q: ReturnType<typeof prepareWorkflowStore>;

  /** Prepares every statement on `handle`; the schema must be migrated. */
  constructor(handle: SqliteHandle) {
    this.#handle = handle;
    this.#q = prepareWorkflowStore(handle);
  }

  upsertWorkflows(rows: readonly WorkflowDefinitionRow[], now: Date): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    return writeTransaction(this.#handle, 'upsertWorkflows', () => {
      upsertWorkflowRows(this.#handle, rows, now);
    });
  }

  listWorkflows(): Promise<WorkflowInfo[]> {
    return readTransaction(this.#handle, 'listWorkflows', () => this.#q.list.all());
  }

  getLatestWorkflow(name: string): Promise<WorkflowInfo | null> {
    return readTransaction(this.#handle, 'getLatestWorkflow', () => this.#q.latest.get({ name }) ?? null);
  }
}
