/**
 * Renders the SQL of an adapter's statements as one reviewable text: a `-- file/query` header per
 * statement, then its SQL with a line break before each top-level clause. Accepts drizzle's
 * prepared queries, query builders (`toSQL()`) and raw queries (`getQuery()`).
 */

/** Anything drizzle can tell the SQL of. */
type Statement = unknown;

// drizzle writes its keywords in lower case and on one line; the raw SQL in the adapters is upper case and laid out by hand.
const CLAUSES =
  / (select|from|inner join|left join|where|group by|order by|limit|offset|for update|for no key update|returning|set|values|on conflict|union all|insert into|update|delete from)\s/g;

/** The SQL text of a prepared query, a query builder or a raw query. */
export function sqlText(statement: Statement): string {
  const s = statement as {
    query?: { sql?: string };
    toSQL?: () => { sql: string };
    getQuery?: () => { sql: string };
  };
  if (typeof s.toSQL === 'function') return s.toSQL().sql;
  if (typeof s.getQuery === 'function') return s.getQuery().sql;
  if (typeof s.query?.sql === 'string') return s.query.sql;
  throw new Error(`Not a drizzle statement: ${String(statement)}`);
}

/** Breaks drizzle's one-line SQL before each clause, outside string literals. */
function layout(text: string): string {
  return text
    .split("'")
    .map((part, i) => (i % 2 === 0 ? part.replace(CLAUSES, (_m, clause: string) => `\n  ${clause} `) : part))
    .join("'")
    .replace(/[ \t]+$/gm, '');
}

/**
 * Flattens `{ file: { query: statement } }` (any depth) into `[file/query, statement]` pairs. A
 * query that sends several statements (SQLite, where it must differ) is an array of them,
 * labelled `file/query#1`, `file/query#2`, … in order.
 */
export function flattenStatements(tree: Record<string, unknown>, prefix = ''): Array<[string, Statement]> {
  return Object.entries(tree).flatMap(([key, value]) => {
    const name = prefix === '' ? key : `${prefix}/${key}`;
    if (Array.isArray(value))
      return value.map((statement, i) => [`${name}#${i + 1}`, statement] as [string, Statement]);
    const isGroup =
      value !== null &&
      typeof value === 'object' &&
      !('query' in value) &&
      !('toSQL' in value) &&
      !('getQuery' in value) &&
      Object.getPrototypeOf(value) === Object.prototype;
    return isGroup ? flattenStatements(value as Record<string, unknown>, name) : [[name, value] as [string, Statement]];
  });
}

/** The `file/query` of a snapshot label: `#n` (one statement of several) dropped. */
export function queryOfLabel(label: string): string {
  return label.replace(/#\d+$/, '');
}

/** The labels of a snapshot file's statements (its `-- file/query` lines), in order. */
export function snapshotLabels(text: string): string[] {
  return [...text.matchAll(/^-- (\S+)$/gm)].map((match) => match[1]!);
}

/** The snapshot text of named statements, in the order given. */
export function renderSqlSnapshot(statements: ReadonlyArray<[string, Statement]>): string {
  return `${statements.map(([name, statement]) => `-- ${name}\n${layout(sqlText(statement))};\n`).join('\n')}`;
}
