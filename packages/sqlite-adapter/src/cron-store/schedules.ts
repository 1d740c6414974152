import {
  DatabaseError,
  ScheduleConflictError,
  type ScheduleFilter,
  type ScheduleRow,
  type ScheduleSyncWrites,
} from '@orreryjs/core';
import { and, asc, eq, getTableColumns, lte, notInArray, sql } from 'drizzle-orm';
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core';
import { bind, bindAllColumns, uuidToBytes } from '../codec.js';
import type { SqliteTables } from '../schema.js';
import type { SqliteDb, SqliteHandle } from '../transaction.js';
import type { ClaimStatements } from './claim.js';

import { isEnabled } from './conditions.js';
/*
 * Schedules: insert (idempotent by name), read, list, compare-and-set update, delete, and a
 * declarative sync's writes applied together.
 */

/** Prepares the schedule statements once on the connection. */
export function prepareSchedules({ db, tables }: SqliteHandle) {
  const s = tables.cronSchedules;
  return {
    insertSchedule: db.insert(s).values(bindAllColumns(s)).onConflictDoNothing().returning().prepare(),
    // A sync's insert: no RETURNING, so that a row costs no read back (`changes` says whether it went in).
    // Differs by necessity: SQLite has no arrays to unnest, so a chunk is one prepared statement per row.
    insertScheduleChunk: db.insert(s).values(bindAllColumns(s)).onConflictDoNothing().prepare(),
    selectSchedule: db
      .select()
      .from(s)
      .where(eq(s.id, bind(s.id, 'id')))
      .prepare(),
    selectScheduleByName: db
      .select()
      .from(s)
      .where(eq(s.name, bind(s.name, 'name')))
      .prepare(),
    deleteSchedule: db
      .delete(s)
      .where(eq(s.id, bind(s.id, 'id')))
      .prepare(),
    deleteScheduleAtVersion: db
      .delete(s)
      .where(and(eq(s.id, bind(s.id, 'id')), eq(s.version, bind(s.version, 'version'))))
      .prepare(),
  };
}

export type ScheduleStatements = ReturnType<typeof prepareSchedules>;

/** Inserts `schedule`, or returns the schedule that already holds its name. */
export function insertSchedule(
  q: ScheduleStatements,
  schedule: ScheduleRow,
): { schedule: ScheduleRow; created: boolean } {
  const [inserted] = q.insertSchedule.all({ ...schedule });
  if (inserted !== undefined) return { schedule: inserted, created: true };
  const existing = schedule.name === null ? undefined : q.selectScheduleByName.get({ name: schedule.name });
  if (existing === undefined) throw new DatabaseError(`insertSchedule failed: schedule ${schedule.id} already exists`);
  return { schedule: existing, created: false };
}

/**
 * Deletes a schedule, inside the caller's write transaction; its ledger stays, but its
 * `buffered` rows become `skipped`: nothing would ever release them. False when unknown.
 */
export function deleteSchedule(q: { schedules: ScheduleStatements; claim: ClaimStatements }, id: string): boolean {
  q.claim.skipBufferedRows.run({ scheduleId: id });
  return q.schedules.deleteSchedule.run({ id }).changes > 0;
}

/** Thrown inside a sync's transaction when one of its writes lost a race: the whole sync rolls back. */
export class ScheduleSyncLost extends Error {}

/**
 * A sync's inserts, compare-and-set updates and deletes, inside the caller's write
 * transaction (see CronStore.applyScheduleSync).
 * @throws ScheduleSyncLost when a name is taken or a version moved on, so that the caller rolls back.
 */
export function applyScheduleSync(
  db: SqliteDb,
  tables: SqliteTables,
  q: { schedules: ScheduleStatements; claim: ClaimStatements },
  writes: ScheduleSyncWrites,
): void {
  if (insertScheduleChunk(q.schedules, writes.inserts) < writes.inserts.length) throw new ScheduleSyncLost();
  // One statement per set of patched columns (a sync has a few: definitions, re-timed ones, pauses).
  const groups = new Map<string, ScheduleSyncWrites['updates']>();
  for (const update of writes.updates) {
    const key = Object.keys(update.patch).sort().join(',');
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [update]);
    else group.push(update);
  }
  for (const [key, updates] of groups) {
    const updated = updateScheduleGroup(db, tables, key === '' ? [] : key.split(','), updates).run().changes;
    if (updated < updates.length) throw new ScheduleSyncLost();
  }
  for (const { id, expectedVersion } of writes.deletes) {
    if (q.schedules.deleteScheduleAtVersion.run({ id, version: expectedVersion }).changes === 0) {
      throw new ScheduleSyncLost();
    }
    q.claim.skipBufferedRows.run({ scheduleId: id });
  }
}

/**
 * Inserts schedules ON CONFLICT DO NOTHING inside the caller's transaction; returns how many
 * went in. Differs by necessity: SQLite has no arrays to unnest, so one prepared statement
 * runs per row.
 */
export function insertScheduleChunk(q: ScheduleStatements, rows: readonly ScheduleRow[]): number {
  let inserted = 0;
  for (const row of rows) inserted += q.insertScheduleChunk.run({ ...row }).changes;
  return inserted;
}

/**
 * Writes the same columns (`fields`) of many schedules by compare-and-set on their versions, one
 * statement; its `changes` say how many it updated. Differs by necessity: SQLite has no arrays
 * to unnest, so the rows are one JSON parameter (`[id hex, expected version, values…]` each)
 * read by `json_each`. Raw SQL for the source and the values, which drizzle's builder cannot name.
 */
export function updateScheduleGroup(
  db: SqliteDb,
  tables: SqliteTables,
  fields: readonly string[],
  updates: ScheduleSyncWrites['updates'],
) {
  const s = tables.cronSchedules;
  const columns = getTableColumns(s) as Record<string, SQLiteColumn>;
  const encoders = fields.map((field) => columns[field]!);
  const rows = updates.map(({ id, expectedVersion, patch }) => {
    const row: unknown[] = [uuidToBytes(id).toString('hex'), expectedVersion];
    for (let index = 0; index < fields.length; index += 1) {
      const value = (patch as Record<string, unknown>)[fields[index]!];
      row.push(value === null || value === undefined ? null : encoders[index]!.mapToDriverValue(value));
    }
    return row;
  });
  return db
    .update(s)
    .set({
      ...Object.fromEntries(fields.map((field, index) => [field, sql.raw(`v.value ->> ${index + 2}`)])),
      version: sql`${s.version} + 1`,
    })
    .from(sql`json_each(${JSON.stringify(rows)}) AS v`)
    .where(and(sql`${s.id} = unhex(v.value ->> 0)`, sql`${s.version} = v.value ->> 1`));
}

/**
 * {@link selectSchedules}, run, its rows read as arrays and decoded by the column codecs
 * rather than drizzle's row mapping, which classifies every field of every row again: a sync
 * reads every schedule, 100,000 rows of 23 columns.
 */
export function listSchedules(
  client: SqliteHandle['client'],
  db: SqliteDb,
  tables: SqliteTables,
  filter: ScheduleFilter,
) {
  const { sql: text, params } = selectSchedules(db, tables, filter).toSQL();
  const rows = client
    .prepare(text)
    .raw()
    .all(...params) as unknown[][];
  // drizzle's select lists every column in the table's order.
  const columns = Object.entries(getTableColumns(tables.cronSchedules) as Record<string, SQLiteColumn>);
  return rows.map((values) => {
    const row: Record<string, unknown> = {};
    for (let index = 0; index < columns.length; index += 1) {
      const [field, column] = columns[index]!;
      const value = values[index];
      row[field] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
    }
    return row as unknown as ScheduleRow;
  });
}

/** One page of schedules, oldest first. */
export function selectSchedules(db: SqliteDb, tables: SqliteTables, filter: ScheduleFilter) {
  const s = tables.cronSchedules;
  return (
    db
      .select()
      .from(s)
      .where(
        and(
          filter.enabledOnly === true ? isEnabled(tables) : undefined,
          filter.workflowName === undefined ? undefined : eq(s.workflowName, filter.workflowName),
        ),
      )
      // rowid breaks ties between schedules created in the same millisecond: earlier insert first.
      .orderBy(asc(s.createdAt), sql`${s}.rowid`)
      .limit(filter.limit)
      .offset(filter.offset)
  );
}

/** Enabled schedules due before `dueBefore` whose workflow no live runner has (see CronStore.listStrandedSchedules). */
export function selectStrandedSchedules(
  db: SqliteDb,
  tables: SqliteTables,
  dueBefore: Date,
  runnable: readonly string[],
  limit: number,
) {
  const s = tables.cronSchedules;
  return db
    .select()
    .from(s)
    .where(
      and(
        isEnabled(tables),
        lte(s.nextRunAt, dueBefore),
        runnable.length === 0 ? undefined : notInArray(s.workflowName, [...runnable]),
      ),
    )
    .orderBy(asc(s.nextRunAt))
    .limit(limit);
}

/** Writes `patch` if the schedule still has `expectedVersion`, bumping the version. */
export function updateScheduleVersion(
  db: SqliteDb,
  tables: SqliteTables,
  id: string,
  expectedVersion: number,
  patch: Partial<Omit<ScheduleRow, 'id' | 'version' | 'createdAt'>>,
) {
  const s = tables.cronSchedules;
  return db
    .update(s)
    .set({ ...patch, version: sql`${s.version} + 1` })
    .where(and(eq(s.id, id), eq(s.version, expectedVersion)))
    .returning();
}

/**
 * {@link updateScheduleVersion}, run.
 * @throws ScheduleConflictError when the new name is taken by another schedule.
 */
export function updateSchedule(
  db: SqliteDb,
  tables: SqliteTables,
  id: string,
  expectedVersion: number,
  patch: Partial<Omit<ScheduleRow, 'id' | 'version' | 'createdAt'>>,
): ScheduleRow | null {
  try {
    return updateScheduleVersion(db, tables, id, expectedVersion, patch).get() ?? null;
  } catch (error) {
    if (!isNameTaken(error)) throw error;
    throw new ScheduleConflictError(
      `Schedule name "${patch.name}" is already taken by another schedule; choose another name or update that schedule.`,
      { cause: error },
    );
  }
}

/** True for SQLite's unique violation on `cron_schedules.name`. */
function isNameTaken(error: unknown): boolean {
  const candidate = error as { code?: unknown; message?: unknown };
  return candidate?.code === 'SQLITE_CONSTRAINT_UNIQUE' && String(candidate.message).includes('cron_schedules.name');
}
