import type { WorkflowDefinitionRow, WorkflowInfo, WorkflowStore } from '@orreryjs/core';
import { asc, desc, eq, sql } from 'drizzle-orm';
import { bind } from '../codec.js';
import { type PostgresHandle, statement } from '../transaction.js';

/** Builds the workflow statements once; each is named, so each connection parses it once. */
export function prepareWorkflowStore({ db, tables, named }: PostgresHandle) {
  const w = tables.workflows;
  return {
    list: db
      .select()
      .from(w)
      .orderBy(asc(w.name), asc(w.registeredAt), asc(w.version))
      .prepare(named('orrery_list_workflows')),
    latest: db
      .select()
      .from(w)
      .where(eq(w.name, bind(w.name, 'name')))
      .orderBy(desc(w.registeredAt), desc(w.version))
      .limit(1)
      .prepare(named('orrery_latest_workflow')),
  };
}

/** Inserts new (name, version) rows and refreshes known ones, in one statement (so one transaction). */
function upsertWorkflowRows({ db, tables }: PostgresHandle, rows: readonly WorkflowDefinitionRow[], now: Date) {
  const w = tables.workflows;
  return db
    .insert(w)
    .values(rows.map((row) => ({ ...row, registeredAt: now, lastSeenAt: now })))
    .onConflictDoUpdate({
      target: [w.name, w.version],
      set: {
        description: sql`excluded.description`,
        // Raw: drizzle cannot name the existing row's column beside `excluded` in a GREATEST. The
        // existing row goes by the bare table name even when the INSERT names its schema.
        lastSeenAt: sql`GREATEST(${sql.raw('workflows.last_seen_at')}, excluded.last_seen_at)`,
      },
    });
}

/** {@link WorkflowStore} on Postgres: each method is one statement. */
export class PostgresWorkflowStore implements WorkflowStore {
  readonly #handle: PostgresHandle;
  readonly #q: ReturnType<typeof prepareWorkflowStore>;

  /** Builds every statement for `handle`; the schema must be migrated. */
  constructor(handle: PostgresHandle) {
    this.#handle = handle;
    this.#q = prepareWorkflowStore(handle);
  }

  upsertWorkflows(rows: readonly WorkflowDefinitionRow[], now: Date): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    return statement('upsertWorkflows', async () => {
      await upsertWorkflowRows(this.#handle, rows, now);
    });
  }

  listWorkflows(): Promise<WorkflowInfo[]> {
    return statement('listWorkflows', () => this.#q.list.execute());
  }

  getLatestWorkflow(name: string): Promise<WorkflowInfo | null> {
    return statement('getLatestWorkflow', async () => (await this.#q.latest.execute({ name }))[0] ?? null);
  }
}
