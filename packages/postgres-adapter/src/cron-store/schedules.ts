import {
  DatabaseError,
  ScheduleConflictError,
  type ScheduleFilter,
  type ScheduleRow,
  type ScheduleSyncWrites,
} from '@orreryjs/core';
import { and, asc, eq, getTableColumns, lte, notInArray, sql } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import {
  arrayParam,
  bind,
  bindAllColumns,
  columnValues,
  DRIVER_TEXT_TYPES,
  decodeRow,
  encodeUuidList,
  unnestedRows,
  unnestOf,
} from '../codec.js';
import type { PostgresTables } from '../schema.js';
import { type PostgresDb, type PostgresHandle, sqlState } from '../transaction.js';
import { skipBufferedRows } from './claim.js';
import { isBuffered, isEnabled } from './conditions.js';

/*
 * Schedules: insert (idempotent by name), read, list, compare-and-set update, delete, and a
 * declarative sync's writes applied together.
 */

// Rows per INSERT of a sync (one array parameter per column): bounds the size of one statement's parameters.
const SYNC_INSERT_CHUNK = 10_000;

/** Builds the schedule statements once; each is named, so each connection parses it once. */
export function prepareSchedules({ db, tables, named }: PostgresHandle) {
  const { cronSchedules: s, cronExecutions: c } = tables;
  // Deleting a schedule turns its buffered rows `skipped` in the same statement: nothing would ever release them.
  const skippedBuffered = db.$with('skipped_buffered').as(
    db
      .update(c)
      .set({ status: 'skipped' })
      .where(and(eq(c.scheduleId, bind(c.scheduleId, 'id')), isBuffered(tables)))
      .returning({ id: c.id }),
  );
  return {
    insertSchedule: db
      .insert(s)
      .values(bindAllColumns(s))
      .onConflictDoNothing()
      .returning()
      .prepare(named('orrery_insert_schedule')),
    selectSchedule: db
      .select()
      .from(s)
      .where(eq(s.id, bind(s.id, 'id')))
      .prepare(named('orrery_select_schedule')),
    selectScheduleByName: db
      .select()
      .from(s)
      .where(eq(s.name, bind(s.name, 'name')))
      .prepare(named('orrery_select_schedule_by_name')),
    deleteSchedule: db
      .with(skippedBuffered)
      .delete(s)
      .where(eq(s.id, bind(s.id, 'id')))
      .prepare(named('orrery_delete_schedule')),
  };
}

export type ScheduleStatements = ReturnType<typeof prepareSchedules>;

/** Inserts `schedule`, or returns the schedule that already holds its name. */
export async function insertSchedule(
  q: ScheduleStatements,
  schedule: ScheduleRow,
): Promise<{ schedule: ScheduleRow; created: boolean }> {
  const [inserted] = await q.insertSchedule.execute({ ...schedule });
  if (inserted !== undefined) return { schedule: inserted, created: true };
  const [existing] = schedule.name === null ? [] : await q.selectScheduleByName.execute({ name: schedule.name });
  if (existing === undefined) throw new DatabaseError(`insertSchedule failed: schedule ${schedule.id} already exists`);
  return { schedule: existing, created: false };
}

/**
 * Deletes a schedule, one statement; its ledger stays, but its `buffered` rows become
 * `skipped`: nothing would ever release them. False when unknown.
 */
export async function deleteSchedule(q: ScheduleStatements, id: string): Promise<boolean> {
  return ((await q.deleteSchedule.execute({ id })).rowCount ?? 0) > 0;
}

/** Thrown inside a sync's transaction when one of its writes lost a race: the whole sync rolls back. */
export class ScheduleSyncLost extends Error {}

/**
 * A sync's inserts, compare-and-set updates and deletes, inside the caller's transaction
 * (see CronStore.applyScheduleSync). The schedule triggers NOTIFY the other processes.
 * @throws ScheduleSyncLost when a name is taken or a version moved on, so that the caller rolls back.
 */
export async function applyScheduleSync(
  tx: PostgresDb,
  tables: PostgresTables,
  writes: ScheduleSyncWrites,
): Promise<void> {
  for (let start = 0; start < writes.inserts.length; start += SYNC_INSERT_CHUNK) {
    const chunk = writes.inserts.slice(start, start + SYNC_INSERT_CHUNK);
    const inserted = (await insertScheduleChunk(tx, tables, chunk)).rowCount ?? 0;
    if (inserted < chunk.length) throw new ScheduleSyncLost();
  }
  // One statement per set of patched columns (a sync has a few: definitions, re-timed ones, pauses).
  const groups = new Map<string, ScheduleSyncWrites['updates']>();
  for (const update of writes.updates) {
    const key = Object.keys(update.patch).sort().join(',');
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [update]);
    else group.push(update);
  }
  for (const [key, updates] of groups) {
    const updated = (await updateScheduleGroup(tx, tables, key === '' ? [] : key.split(','), updates)).rowCount ?? 0;
    if (updated < updates.length) throw new ScheduleSyncLost();
  }
  if (writes.deletes.length > 0) {
    const deleted = (await deleteScheduleAtVersion(tx, tables, writes.deletes)).rowCount ?? 0;
    if (deleted < writes.deletes.length) throw new ScheduleSyncLost();
    await skipBufferedRows(
      tx,
      tables,
      writes.deletes.map((write) => write.id),
    );
  }
}

/** Deletes schedules by compare-and-set on their versions, one statement; its `rowCount` says how many. */
export function deleteScheduleAtVersion(
  db: PostgresDb,
  tables: PostgresTables,
  deletes: ScheduleSyncWrites['deletes'],
) {
  const s = tables.cronSchedules;
  const ids = arrayParam(encodeUuidList(deletes.map((write) => write.id)));
  const versions = arrayParam(deletes.map((write) => write.expectedVersion));
  return db.delete(s).where(sql`(${s.id}, ${s.version}) IN (SELECT * FROM unnest(${ids}::uuid[], ${versions}::int[]))`);
}

/**
 * Inserts schedules ON CONFLICT DO NOTHING in one statement, whatever their number: the rows
 * are the `unnest` of one array parameter per column (see {@link columnValues}). Its
 * `rowCount` says how many went in. Raw SQL for the source (drizzle's builder has no unnest):
 * a multi-row VALUES binds 23 parameters a row, and building it cost more than the server
 * took to insert.
 */
export function insertScheduleChunk(db: PostgresDb, tables: PostgresTables, rows: readonly ScheduleRow[]) {
  const s = tables.cronSchedules;
  return db.insert(s).select(unnestedRows(s, rows)).onConflictDoNothing();
}

/**
 * Writes the same columns (`fields`) of many schedules by compare-and-set on their versions, one
 * statement; its `rowCount` says how many it updated.
 */
export function updateScheduleGroup(
  tx: PostgresDb,
  tables: PostgresTables,
  fields: readonly string[],
  updates: ScheduleSyncWrites['updates'],
) {
  const s = tables.cronSchedules;
  const columns = getTableColumns(s) as Record<string, PgColumn>;
  const key = [
    columnValues(
      s.id,
      updates.map((update) => update.id),
      'id',
      true,
    ),
    columnValues(
      s.version,
      updates.map((update) => update.expectedVersion),
      'expected_version',
      true,
    ),
  ];
  const values = fields.map((field, index) =>
    columnValues(
      columns[field]!,
      updates.map(({ patch }) => (patch as Record<string, unknown>)[field]),
      `f${index}`,
    ),
  );
  // Raw SQL: rows from parallel arrays (unnest), which drizzle's builder cannot name as an UPDATE source.
  return tx
    .update(s)
    .set({
      ...Object.fromEntries(fields.map((field, index) => [field, values[index]!.expression])),
      version: sql`${s.version} + 1`,
    })
    .from(unnestOf([...key, ...values]))
    .where(and(sql`${s.id} = v.id`, sql`${s.version} = v.expected_version`));
}

/**
 * {@link selectSchedules}, run, its rows decoded by the column codecs ({@link decodeRow})
 * rather than drizzle's row mapping, which classifies every field of every row again: a sync
 * reads every schedule, 100,000 rows of 23 columns.
 */
export async function listSchedules(db: PostgresDb, tables: PostgresTables, filter: ScheduleFilter) {
  const { sql: text, params } = selectSchedules(db, tables, filter).toSQL();
  const { rows } = await db.$client.query<Record<string, unknown>>({ text, values: params, types: DRIVER_TEXT_TYPES });
  const columns = getTableColumns(tables.cronSchedules) as Record<string, PgColumn>;
  return rows.map((row) => decodeRow<ScheduleRow>(columns, row));
}

/** One page of schedules, oldest first. */
export function selectSchedules(db: PostgresDb, tables: PostgresTables, filter: ScheduleFilter) {
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
      // Postgres has no insertion order to break ties between schedules created in the same millisecond: the id does.
      .orderBy(asc(s.createdAt), asc(s.id))
      .limit(filter.limit)
      .offset(filter.offset)
  );
}

/** Writes `patch` if the schedule still has `expectedVersion`, bumping the version. */
export function updateScheduleVersion(
  db: PostgresDb,
  tables: PostgresTables,
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
export async function updateSchedule(
  db: PostgresDb,
  tables: PostgresTables,
  id: string,
  expectedVersion: number,
  patch: Partial<Omit<ScheduleRow, 'id' | 'version' | 'createdAt'>>,
): Promise<ScheduleRow | null> {
  try {
    const [updated] = await updateScheduleVersion(db, tables, id, expectedVersion, patch);
    return updated ?? null;
  } catch (error) {
    if (!isNameTaken(error)) throw error;
    throw new ScheduleConflictError(
      `Schedule name "${patch.name}" is already taken by another schedule; choose another name or update that schedule.`,
      { cause: error },
    );
  }
}

/** True for Postgres's unique violation on `cron_schedules.name`. */
function isNameTaken(error: unknown): boolean {
  const cause = (error as { cause?: { constraint?: unknown } })?.cause;
  const constraint = (error as { constraint?: unknown })?.constraint ?? cause?.constraint;
  return sqlState(error) === '23505' && constraint === 'cron_schedules_name_key';
}

/** Enabled schedules due before `dueBefore` whose workflow no live runner has (see CronStore.listStrandedSchedules). */
export function selectStrandedSchedules(
  db: PostgresDb,
  tables: PostgresTables,
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
