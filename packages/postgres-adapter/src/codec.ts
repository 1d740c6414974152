import { ConfigurationError, UniversalTimestamp, UniversalUuid } from '@orreryjs/core';
import {
  fillPlaceholders,
  getTableColumns,
  getTableName,
  type Query,
  type SQL,
  type SQLWrapper,
  sql,
} from 'drizzle-orm';
import { customType, type PgColumn, PgDialect, type PgInsertValue, type PgTable } from 'drizzle-orm/pg-core';
import pg from 'pg';

/**
 * Universal types <-> Postgres column values. UUIDs are native `uuid`, instants
 * `timestamptz(3)`, JSON is `jsonb` and booleans are native `boolean`. Nothing depends on the
 * session's settings: instants are written as ISO 8601 in UTC and read back in whatever time
 * zone the server's `TimeZone` names (`YYYY-MM-DD hh:mm:ss.fff+05:30`), offset included.
 * Encoders accept null because drizzle hands placeholder values to them unfiltered.
 */

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The canonical lower-case form of a UUID string, checked before it reaches SQL, so that a
 * malformed id is the same `ValidationError` here as on SQLite (not a driver error).
 * @throws ValidationError when `id` is not UUID-shaped.
 */
export function canonicalUuid(id: string): string {
  // Fast path for the canonical form every id in Orrery already has; anything else goes through the strict parser.
  if (CANONICAL_UUID.test(id)) return id;
  return UniversalUuid.parse(id).toString();
}

/**
 * ISO-8601 text of `date`, truncated to whole milliseconds.
 * @throws ValidationError for an invalid Date.
 */
export function dateToIso(date: Date): string {
  return UniversalTimestamp.fromDate(date).toISOString();
}

// `2026-01-02 03:04:05.678+05:30` (timestamptz text in DateStyle ISO) or `2026-01-02T03:04:05.678+05:30` (to_json):
// an optional fraction, and an offset of hours with optional minutes and seconds (local mean time before ~1900).
const TIMESTAMPTZ_TEXT =
  /^(\d{4,})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?|Z)$/;

const digit = (text: string, at: number) => text.charCodeAt(at) - 48;
const twoDigits = (text: string, at: number) => digit(text, at) * 10 + digit(text, at + 1);
const [DASH, SPACE, T, COLON, DOT] = ['-', ' ', 'T', ':', '.'].map((c) => c.charCodeAt(0)) as [
  number,
  number,
  number,
  number,
  number,
];

/**
 * `2026-01-02 03:04:05.678+00` (or `2026-01-02T03:04:05.678+00:00`, as `to_json` writes it) read
 * without a regular expression, three times faster: the form of every timestamp a server in UTC
 * sends, and a claim decodes several per task. Null for any other form (another zone, a fraction
 * past microseconds, a year before 100 or after 9999, BC).
 */
function parseUtcTimestamptz(text: string): Date | null {
  const zone = text.endsWith('+00') ? 3 : text.endsWith('+00:00') ? 6 : 0;
  // The length without the zone: seconds end at 19, a fraction of 1 to 6 digits follows a dot.
  const n = text.length - zone;
  const shaped =
    zone > 0 &&
    (n === 19 || (n >= 21 && n <= 26 && text.charCodeAt(19) === DOT)) &&
    text.charCodeAt(4) === DASH &&
    text.charCodeAt(7) === DASH &&
    (text.charCodeAt(10) === SPACE || text.charCodeAt(10) === T) &&
    text.charCodeAt(13) === COLON &&
    text.charCodeAt(16) === COLON;
  const year = twoDigits(text, 0) * 100 + twoDigits(text, 2);
  // Date.UTC reads years 0-99 as 1900-1999.
  if (!shaped || year < 100) return null;
  let ms = 0;
  for (let at = 20, scale = 100; at < Math.min(n, 23); at += 1, scale /= 10) ms += digit(text, at) * scale;
  const [month, day] = [twoDigits(text, 5) - 1, twoDigits(text, 8)];
  return new Date(Date.UTC(year, month, day, twoDigits(text, 11), twoDigits(text, 14), twoDigits(text, 17), ms));
}

/** A Date from timestamptz text (or the ISO form `to_json` writes), in any time zone the server reports. */
export function parseTimestamptz(text: string): Date {
  const utc = parseUtcTimestamptz(text);
  if (utc !== null) return utc;
  const match = TIMESTAMPTZ_TEXT.exec(text);
  if (match === null) return new Date(text);
  const [, year, month, day, hours, minutes, seconds, fraction = '', sign, oh = '0', om = '0', os = '0'] = match;
  const date = new Date(0);
  date.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
  date.setUTCHours(Number(hours), Number(minutes), Number(seconds), Number(fraction.padEnd(3, '0').slice(0, 3)));
  const offsetMs = (Number(oh) * 3600 + Number(om) * 60 + Number(os)) * 1000;
  return new Date(date.getTime() - (sign === '-' ? -offsetMs : offsetMs));
}

/**
 * Refuses a server whose DateStyle is not ISO: the other styles print a zone abbreviation
 * that cannot be read back to an instant. ISO is Postgres's default; a database or role set
 * to another style must be set back for Orrery's user.
 * @throws ConfigurationError naming the setting and the statement that fixes it.
 */
export async function assertIsoDateStyle(client: pg.ClientBase): Promise<void> {
  const { rows } = await client.query<{ style: string }>("SELECT current_setting('DateStyle') AS style");
  const style = rows[0]?.style ?? '';
  if (!style.toUpperCase().startsWith('ISO')) {
    throw new ConfigurationError(
      `PostgreSQL reports DateStyle "${style}", whose timestamps Orrery cannot read back; run ALTER ROLE <user> SET DateStyle = 'ISO, MDY' (or ALTER DATABASE) for the user Orrery connects as.`,
    );
  }
}

// jsonb cannot hold the string escapes \u0000 or a lone surrogate (\ud800-\udfff), which JSON.stringify emits for
// such strings. A literal backslash before "u" also matches: harmless, it only picks the text form below.
const JSONB_UNSAFE = /\\u(?:0000|d[89a-f])/;

/**
 * jsonb text of a JSON object or array. A value holding a string jsonb refuses (NUL, a lone
 * surrogate) is stored as a jsonb string of its JSON text instead; column values are never
 * top-level strings, so {@link decodeJson} tells the two forms apart.
 */
export function encodeJson(value: unknown): string {
  const text = JSON.stringify(value);
  return JSONB_UNSAFE.test(text) ? JSON.stringify(text) : text;
}

/** The value {@link encodeJson} stored, from what the driver returns (parsed jsonb, or its text). */
export function decodeJson(value: unknown): unknown {
  let decoded = value;
  // At most twice: driver text of the string form, then the JSON text inside it.
  for (let i = 0; i < 2 && typeof decoded === 'string'; i++) decoded = JSON.parse(decoded);
  return decoded;
}

/**
 * Free text (an error message, a reason) as Postgres `text` can hold it: `text` refuses NUL,
 * which SQLite keeps, so each one becomes U+FFFD rather than failing the write (and, with it,
 * the unit of work that reports a failure).
 */
export function storableText(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}

/** Free text <-> `text`, through {@link storableText}. */
export const freeText = customType<{ data: string; driverData: string }>({
  dataType: () => 'text',
  toDriver: (value) => (value === null ? (null as unknown as string) : storableText(value)),
  fromDriver: (value) => value,
});

/** UUID string <-> native `uuid`. */
export const uuid = customType<{ data: string; driverData: string }>({
  dataType: () => 'uuid',
  toDriver: (value) => (value === null ? (null as unknown as string) : canonicalUuid(value)),
  fromDriver: (value) => value,
});

/** Date <-> `timestamptz(3)`, truncated to milliseconds on the way in. */
export const timestamp = customType<{ data: Date; driverData: string }>({
  dataType: () => 'timestamp (3) with time zone',
  toDriver: (value) => (value === null ? (null as unknown as string) : dateToIso(value)),
  fromDriver: (value) => parseTimestamptz(value),
});

const jsonb = customType<{ data: unknown; driverData: unknown }>({
  dataType: () => 'jsonb',
  toDriver: (value) => (value === null ? null : encodeJson(value)),
  fromDriver: (value) => decodeJson(value),
});

/** A JSON object or array of type `T` <-> `jsonb`. */
export function json<T extends object>(name: string) {
  return jsonb(name).$type<T>();
}

/**
 * A list of UUIDs as one `uuid[]` parameter (see {@link uuidListSql}); each id is checked first.
 * @throws ValidationError when an id is not UUID-shaped.
 */
export function encodeUuidList(ids: readonly string[]): string[] {
  return ids.map(canonicalUuid);
}

/**
 * An array bound as one parameter (Postgres reads it as an array literal). A bare array in a
 * `sql` template would be spread into one parameter per element instead.
 */
export function arrayParam(values: readonly unknown[]): SQL {
  return sql`${sql.param(values)}`;
}

/** A placeholder or an array value, as one parameter. */
function listParam(list: SQLWrapper | readonly unknown[]): SQLWrapper {
  return Array.isArray(list) ? arrayParam(list) : (list as SQLWrapper);
}

/**
 * `<column> = ANY(<list>::uuid[])` for an {@link encodeUuidList} array or placeholder. Raw SQL
 * because drizzle's `inArray` binds one parameter per element, which would change the
 * statement's shape (and defeat `.prepare()`) with every list length.
 */
export function inUuidList(column: SQLWrapper, list: SQLWrapper | readonly string[]): SQL {
  return sql`${column} = ANY(${listParam(list)}::uuid[])`;
}

/** `<column> = ANY(<list>::text[])` for a string array or placeholder; raw SQL for the same reason as {@link inUuidList}. */
export function inTextList(column: SQLWrapper, list: SQLWrapper | readonly string[]): SQL {
  return sql`${column} = ANY(${listParam(list)}::text[])`;
}

/**
 * A named placeholder encoded with `column`'s codec when a prepared statement runs
 * (drizzle leaves a bare placeholder in a condition unencoded), cast to the column's type so
 * that Postgres never has to guess it. Usable in `where`, `set` and `values`.
 */
export function bind(column: PgColumn, name: string): SQL {
  return sql`${sql.param(sql.placeholder(name), column)}::${sql.raw(column.getSQLType())}`;
}

/**
 * Insert values binding every column of `table` to a placeholder named after its field, so
 * a prepared insert runs with the row object itself.
 */
export function bindAllColumns<T extends PgTable>(table: T): PgInsertValue<T> {
  const columns = getTableColumns(table) as Record<string, PgColumn>;
  return Object.fromEntries(
    Object.entries(columns).map(([field, column]) => [field, bind(column, field)]),
  ) as PgInsertValue<T>;
}

/**
 * Decodes a row that Postgres built as JSON (`to_json`, `json_agg`), or a driver row read with
 * {@link DRIVER_TEXT_TYPES}, with the codecs of `columns`: keys are column names (after
 * `prefix`), values what `to_json` or the driver returned for each type. Other keys are ignored.
 */
export function decodeRow<T>(columns: Record<string, PgColumn>, row: Record<string, unknown>, prefix = ''): T {
  const decoded: Record<string, unknown> = {};
  for (const [field, column] of columnEntries(columns)) {
    const value = row[prefix === '' ? column.name : `${prefix}${column.name}`];
    decoded[field] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return decoded as T;
}

/** Each column set's entries, listed once: {@link decodeRow} runs for every row of every claim and finish. */
const entriesOf = new WeakMap<Record<string, PgColumn>, ReadonlyArray<[string, PgColumn]>>();

function columnEntries(columns: Record<string, PgColumn>): ReadonlyArray<[string, PgColumn]> {
  let entries = entriesOf.get(columns);
  if (entries === undefined) {
    entries = Object.entries(columns);
    entriesOf.set(columns, entries);
  }
  return entries;
}

/*
 * Columns carried through a CTE. A statement that locks or updates rows in one CTE and reads them
 * in another refers to them by alias; `mapWith` keeps each column's codec attached, so the row
 * still decodes to universal types.
 */

/** `columns` as aliased fields `<prefix><column name>`, keyed `<prefix><field>`, decoded with their codecs. */
export function aliasColumns(columns: Record<string, PgColumn>, prefix: string): Record<string, SQL.Aliased> {
  return Object.fromEntries(
    Object.entries(columns).map(([field, column]) => [
      `${prefix}${field}`,
      sql`${column}`.mapWith(column).as(`${prefix}${column.name}`),
    ]),
  );
}

/** The fields of `source` (a CTE) that {@link aliasColumns} named, keyed `<prefix><field>` as there. */
export function carryAliased(source: object, columns: Record<string, PgColumn>, prefix: string): Record<string, SQL> {
  const fields = source as Record<string, SQL>;
  return Object.fromEntries(Object.keys(columns).map((field) => [`${prefix}${field}`, fields[`${prefix}${field}`]!]));
}

/** What a column reads back as: its data type, or null when it is nullable. */
type ColumnValue<C extends PgColumn> = C['_']['notNull'] extends true ? C['_']['data'] : C['_']['data'] | null;

/** A selection typed like `columns`, so that drizzle infers the row type. */
export type FieldsLike<T extends Record<string, PgColumn>> = { [K in keyof T]: SQL<ColumnValue<T[K]>> };

/** The fields of `source` (a CTE that returned `columns` as they are), keyed by field name. */
export function fieldsOf<T extends Record<string, PgColumn>>(source: object, columns: T) {
  const fields = source as Record<string, SQL>;
  return Object.fromEntries(Object.keys(columns).map((field) => [field, fields[field]!])) as FieldsLike<T>;
}

/**
 * `<column> IN ('a', 'b')` for a status set from core, written as literals rather than bound
 * parameters so that a generic plan can use the partial indexes whose condition names them.
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

/**
 * Tables for a locking clause's `OF` list by their bare names: Postgres refuses a qualified name
 * there ("FOR NO KEY UPDATE must specify unqualified relation names"), and drizzle would write
 * the schema of a schema-qualified table.
 */
export function lockOf(...tables: PgTable[]): PgTable[] {
  return tables.map((table) => sql.identifier(getTableName(table))) as unknown as PgTable[];
}

const dialect = new PgDialect();

/**
 * Type parsers for rows decoded by the column codecs: instants stay text (the codec reads every
 * zone and year the server prints, pg's parser does not), everything else as pg parses it.
 */
export const DRIVER_TEXT_TYPES = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.TIMESTAMPTZ ? (value: string) => value : pg.types.getTypeParser(oid, format),
};

/**
 * A statement built with drizzle's query builder, rendered once, for sending straight through
 * pg under one name and decoding its rows with {@link decodeRow}. drizzle's own execution
 * classifies every selected field of every row again (prototype walks in `is()`): on the claim's
 * 35 columns that was an eighth of a busy worker's CPU.
 */
export function renderBuilt(query: SQLWrapper): {
  text(): string;
  values(placeholders: Record<string, unknown>): unknown[];
} {
  let rendered: Query | undefined;
  const render = () => {
    rendered ??= dialect.sqlToQuery(query.getSQL());
    return rendered;
  };
  return { text: () => render().sql, values: (placeholders) => fillPlaceholders(render().params, placeholders) };
}

/**
 * The text of a raw statement whose parameters are already positional (`$1`, `$2`, …),
 * rendered on first use and kept: a statement sent under one name must keep one text.
 */
export function renderOnce(query: SQL): () => string {
  let text: string | undefined;
  return () => {
    text ??= dialect.sqlToQuery(query).sql;
    return text;
  };
}

/** A column's values as the source of a set-based statement reads them: see {@link columnValues}. */
export interface ColumnValues {
  /** What the statement reads: `v.<alias>`, or the one value all rows share. */
  expression: SQL;
  /** The array parameter `unnest` expands, named `alias`; absent for a shared value. */
  array?: { alias: string; param: SQL };
}

/**
 * One column's values, each encoded as the column encodes it: one `<type>[]` parameter, or a
 * single `<type>` parameter when every row has the same value (unless `alwaysArray`, which
 * the rows' key needs): a sync's rows share most columns (workflow, zone, policies, the
 * instant they were created, nulls), and each array element costs the server a parse. A
 * value that is the same object as the one before reuses its encoding.
 */
export function columnValues(
  column: PgColumn,
  values: readonly unknown[],
  alias: string,
  alwaysArray = false,
): ColumnValues {
  let previous: unknown = null;
  let previousEncoded: unknown = null;
  const encoded = values.map((value): unknown => {
    if (value === null || value === undefined) return null;
    if (value !== previous) {
      previous = value;
      previousEncoded = column.mapToDriverValue(value);
    }
    return previousEncoded;
  });
  const first = encoded[0] ?? null;
  const shared = !alwaysArray && encoded.length > 0 && encoded.every((value) => value === first);
  const type = sql.raw(column.getSQLType());
  if (shared) return { expression: sql`${first}::${type}` };
  return { expression: sql.raw(`v.${alias}`), array: { alias, param: sql`${arrayParam(encoded)}::${type}[]` } };
}

/** `unnest(<arrays>) AS v(<aliases>)`: the rows of the columns sent as arrays. */
export function unnestOf(values: readonly ColumnValues[]): SQL {
  const arrays = values.flatMap((value) => (value.array === undefined ? [] : [value.array]));
  return sql`unnest(${sql.join(
    arrays.map((array) => array.param),
    sql`, `,
  )}) AS v(${sql.raw(arrays.map((array) => array.alias).join(', '))})`;
}

/**
 * `SELECT <every column> FROM unnest(...)`: `rows` as an INSERT source, one array parameter per
 * column (or one value all rows share, see {@link columnValues}), in the table's column order,
 * which is the order drizzle lists an INSERT's columns in. The key `id` is always an array.
 */
export function unnestedRows(table: PgTable, rows: readonly object[]): SQL {
  const values = Object.entries(getTableColumns(table) as Record<string, PgColumn>).map(([field, column], index) =>
    columnValues(
      column,
      rows.map((row) => (row as Record<string, unknown>)[field]),
      `c${index}`,
      field === 'id',
    ),
  );
  return sql`select ${sql.join(
    values.map((value) => value.expression),
    sql`, `,
  )} from ${unnestOf(values)}`;
}
