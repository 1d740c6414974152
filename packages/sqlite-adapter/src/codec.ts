import { UniversalTimestamp, UniversalUuid } from '@orreryjs/core';
import { getTableColumns, type SQL, type SQLWrapper, sql } from 'drizzle-orm';
import { customType, type SQLiteColumn, type SQLiteInsertValue, type SQLiteTable } from 'drizzle-orm/sqlite-core';

/**
 * Universal types <-> SQLite column values. UUIDs are 16-byte BLOBs, instants INTEGER
 * milliseconds since the epoch (so ordering and ranges are numeric), JSON is TEXT and
 * booleans are INTEGER 0/1. Encoders accept null because drizzle hands placeholder values
 * to them unfiltered.
 */

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The 16 bytes of a UUID string.
 * @throws ValidationError when `id` is not UUID-shaped.
 */
export function uuidToBytes(id: string): Buffer {
  // Fast path for the canonical form every id in Orrery already has; anything else goes through the strict parser.
  if (CANONICAL_UUID.test(id)) return Buffer.from(id.replaceAll('-', ''), 'hex');
  return Buffer.from(UniversalUuid.parse(id).toBytes());
}

/** The canonical lower-case string of a 16-byte UUID. */
export function bytesToUuid(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
  if (hex.length !== 32) return UniversalUuid.fromBytes(bytes).toString();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Epoch milliseconds of `date`, truncated to whole milliseconds.
 * @throws ValidationError for an invalid Date.
 */
export function dateToMillis(date: Date): number {
  return UniversalTimestamp.fromDate(date).epochMs;
}

/**
 * A list of UUIDs as one JSON parameter, so that `IN (...)` statements keep a fixed shape
 * and can be prepared once (see {@link uuidListSql}).
 */
export function encodeUuidList(ids: readonly string[]): string {
  return JSON.stringify(ids.map((id) => uuidToBytes(id).toString('hex')));
}

/** A list of strings as one JSON parameter, for `IN (SELECT value FROM json_each(?))`. */
export function encodeTextList(values: readonly string[]): string {
  return JSON.stringify(values);
}

/** UUID string <-> 16-byte BLOB. */
export const uuid = customType<{ data: string; driverData: Buffer }>({
  dataType: () => 'blob',
  toDriver: (value) => (value === null ? (null as unknown as Buffer) : uuidToBytes(value)),
  fromDriver: (value) => bytesToUuid(value),
});

/** Date <-> INTEGER epoch milliseconds (truncated). */
export const timestamp = customType<{ data: Date; driverData: number }>({
  dataType: () => 'integer',
  toDriver: (value) => (value === null ? (null as unknown as number) : dateToMillis(value)),
  fromDriver: (value) => new Date(value),
});

/** boolean <-> INTEGER 0/1. */
export const bool = customType<{ data: boolean; driverData: number }>({
  dataType: () => 'integer',
  toDriver: (value) => (value ? 1 : 0),
  fromDriver: (value) => value === 1,
});

const jsonText = customType<{ data: unknown; driverData: string }>({
  dataType: () => 'text',
  toDriver: (value) => (value === null ? (null as unknown as string) : JSON.stringify(value)),
  fromDriver: (value) => JSON.parse(value),
});

/** A JSON value of type `T` <-> TEXT. */
export function json<T>(name: string) {
  return jsonText(name).$type<T>();
}

/**
 * `(SELECT unhex(value) FROM json_each(<list>))`: the ids of an {@link encodeUuidList}
 * parameter as BLOBs. Raw SQL because drizzle's `inArray` binds one parameter per element,
 * which would change the statement's shape (and defeat `.prepare()`) with every list length.
 */
export function uuidListSql(list: SQLWrapper): SQL {
  return sql`(SELECT unhex(value) FROM json_each(${list}))`;
}

/** `(SELECT value FROM json_each(<list>))` for an {@link encodeTextList} parameter; raw SQL for the same reason. */
export function textListSql(list: SQLWrapper): SQL {
  return sql`(SELECT value FROM json_each(${list}))`;
}

/**
 * A named placeholder encoded with `column`'s codec when a prepared statement runs
 * (drizzle leaves a bare placeholder in a condition unencoded). Usable in `where`, `set`
 * and `values`.
 */
export function bind(column: SQLiteColumn, name: string): SQL {
  return sql`${sql.param(sql.placeholder(name), column)}`;
}

/**
 * Insert values binding every column of `table` to a placeholder named after its field, so
 * a prepared insert runs with the row object itself (`.run(row)`).
 */
export function bindAllColumns<T extends SQLiteTable>(table: T): SQLiteInsertValue<T> {
  const columns = getTableColumns(table) as Record<string, SQLiteColumn>;
  return Object.fromEntries(
    Object.entries(columns).map(([field, column]) => [field, bind(column, field)]),
  ) as SQLiteInsertValue<T>;
}

/**
 * `<column> IN ('a', 'b')` for a status set from core, written as literals rather than bound
 * parameters so that SQLite matches the query to the partial indexes whose condition names them.
 */
export function statusIn(column: SQLWrapper, statuses: readonly string[]): SQL {
  return sql`${column} IN ${statusList(statuses)}`;
}

/** `<column> NOT IN ('a', 'b')` for a status set from core, as literals like {@link statusIn}. */
export function statusNotIn(column: SQLWrapper, statuses: readonly string[]): SQL {
  return sql`${column} NOT IN ${statusList(statuses)}`;
}

/** `('a', 'b')`: a status set as SQL literals (statuses are identifiers from core, never user input). */
function statusList(statuses: readonly string[]): SQL {
  return sql.raw(`(${statuses.map((status) => `'${status}'`).join(', ')})`);
}
