import Table from 'cli-table3';
import type { Command } from 'commander';

/** Where the CLI writes; injected so that a caller embedding {@link buildProgram} can capture it. */
export interface CliIo {
  /** Results: tables, JSON documents, status lines. */
  stdout(text: string): void;
  /** Errors and warnings, one line each. */
  stderr(text: string): void;
}

/** The process's own streams. */
export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/**
 * One column of a table: its heading and how a row renders in it. By default a table fits
 * {@link TABLE_WIDTH} characters: `wideOnly` columns are left out, `narrow` cells replace
 * `cell`, and text of any length (`shrinks`) is cut with `…`; `--wide` shows every column whole.
 */
export interface Column<T> {
  header: string;
  cell(row: T): string | number | boolean;
  /** Shown only with `--wide`. */
  wideOnly?: boolean;
  /** The cell without `--wide`, when shorter than `cell` (an id's first 8 characters). */
  narrow?(row: T): string;
  /** Text of unbounded length (names, errors, notes): cut to fit without `--wide`. */
  shrinks?: boolean;
  /**
   * The narrowest a `shrinks` column is cut to, when more than its heading must stay
   * readable (a status and the start of its reason); else {@link MIN_CUT_WIDTH}.
   */
  minWidth?: number;
  /** How a `shrinks` cell is cut to `width`, when its end matters more than its middle; else the end goes. */
  cut?(text: string, width: number): string;
}

/** The flags every command takes to switch from tables to JSON, and tables to every column. */
export interface OutputOptions {
  json?: boolean;
  wide?: boolean;
}

/** How wide a table is without `--wide`, borders included: a terminal of 120 columns. */
export const TABLE_WIDTH = 120;

/** The narrowest a `shrinks` column is cut to (its heading is never cut). */
const MIN_CUT_WIDTH = 6;

/** An id as tables show it without `--wide`: its first 8 characters, which commands accept. */
export function shortId(id: string | null): string {
  return id === null ? '-' : id.slice(0, 8);
}

/**
 * Adds `--wide` to a command that prints a table; `hidden` says what the default table
 * leaves out or shortens, so the help documents it.
 */
export function addWideOption(command: Command, hidden: string): Command {
  return command.option(
    '--wide',
    `show every column in full (by default the table fits ${TABLE_WIDTH} characters: ${hidden})`,
  );
}

/** Adds `--json`, which every command that prints a result takes. */
export function addJsonOption(command: Command): Command {
  return command.option('--json', 'print JSON instead of a table');
}

/**
 * Writes `value` as one indented JSON document. Dates become ISO-8601 UTC strings through
 * their own `toJSON`, and `undefined` fields are dropped, as `JSON.stringify` does.
 */
export function writeJson(io: CliIo, value: unknown): void {
  io.stdout(`${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Writes rows as a table with a heading row, or `empty` when there are none: every column in
 * full with `wide`, else fitted to {@link TABLE_WIDTH} as {@link Column} says.
 */
export function writeTable<T>(
  io: CliIo,
  columns: readonly Column<T>[],
  rows: readonly T[],
  empty: string,
  wide = false,
): void {
  if (rows.length === 0) {
    io.stdout(`${empty}\n`);
    return;
  }
  const shown = wide ? columns : columns.filter((column) => !column.wideOnly);
  const cells = rows.map((row) =>
    shown.map((column) => String(!wide && column.narrow ? column.narrow(row) : column.cell(row))),
  );
  const widths = wide ? undefined : fittedWidths(shown, cells);
  const table = newTable(shown.map((column) => column.header));
  for (const line of cells) {
    table.push(widths === undefined ? line : line.map((cell, i) => fit(cell, widths[i]!, shown[i]!.cut ?? cut)));
  }
  io.stdout(`${table.toString()}\n`);
}

/**
 * Column widths (without padding) that fit {@link TABLE_WIDTH}: the widest `shrinks` column
 * loses a character at a time, down to its heading or its `minWidth`, until the table fits.
 */
function fittedWidths<T>(columns: readonly Column<T>[], cells: readonly string[][]): number[] {
  const widths = columns.map((column, i) => Math.max(column.header.length, ...cells.map((line) => line[i]!.length)));
  const floors = columns.map((column) =>
    column.shrinks ? Math.max(column.header.length, column.minWidth ?? MIN_CUT_WIDTH) : Infinity,
  );
  // Each column adds its padding and a border: "│ cell " is width + 3, plus the last "│".
  let excess = widths.reduce((total, width) => total + width + 3, 1) - TABLE_WIDTH;
  while (excess > 0) {
    let widest = -1;
    for (let i = 0; i < widths.length; i += 1) {
      if (widths[i]! > floors[i]! && (widest === -1 || widths[i]! > widths[widest]!)) widest = i;
    }
    if (widest === -1) break;
    widths[widest]! -= 1;
    excess -= 1;
  }
  return widths;
}

/** `text` in at most `width` characters, ending with `…` when cut. */
export function cut(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

/** `text` as is when it fits `width`, else cut by `cutter`. */
function fit(text: string, width: number, cutter: (text: string, width: number) => string): string {
  return text.length <= width ? text : cutter(text, width);
}

/**
 * Writes `{ ...fields, [listKey]: items }` byte for byte as {@link writeJson} would, one item
 * at a time as `items` yields them, so that a long list is never held whole.
 */
export function writeJsonStream(
  io: CliIo,
  fields: Record<string, unknown>,
  listKey: string,
  items: Iterable<unknown>,
): void {
  // The document with an empty list ends `"<listKey>": []\n}`: open the list there.
  io.stdout(JSON.stringify({ ...fields, [listKey]: [] }, null, 2).slice(0, -3));
  let separator = '\n    ';
  for (const item of items) {
    io.stdout(`${separator}${JSON.stringify(item, null, 2).replaceAll('\n', '\n    ')}`);
    separator = ',\n    ';
  }
  io.stdout(separator === '\n    ' ? ']\n}\n' : '\n  ]\n}\n');
}

/**
 * Writes rows as {@link writeTable} would, one line at a time as `rows` yields them, so that
 * a long table is never held whole. A column is as wide as its heading or its cell in the
 * first row (a later, wider cell widens its own line only); `empty` when there are no rows.
 */
export function writeTableStream<T>(io: CliIo, columns: readonly Column<T>[], rows: Iterable<T>, empty: string): void {
  let widths: number[] | undefined;
  const line = (cells: readonly string[], w: readonly number[]) =>
    `│ ${cells.map((cell, i) => cell.padEnd(w[i]!)).join(' │ ')} │\n`;
  const rule = (w: readonly number[], [left, middle, right]: string) =>
    `${left}${w.map((width) => '─'.repeat(width + 2)).join(middle)}${right}\n`;
  for (const row of rows) {
    const cells = columns.map((column) => String(column.cell(row)));
    if (widths === undefined) {
      const headers = columns.map((column) => column.header);
      widths = columns.map((_, i) => Math.max(headers[i]!.length, cells[i]!.length));
      io.stdout(`${rule(widths, '┌┬┐')}${line(headers, widths)}${rule(widths, '├┼┤')}`);
    }
    io.stdout(line(cells, widths));
  }
  io.stdout(widths === undefined ? `${empty}\n` : rule(widths, '└┴┘'));
}

/** Writes labelled values as a two-column table (label, value), for one object. */
export function writeRecord(io: CliIo, entries: ReadonlyArray<readonly [string, string | number | boolean]>): void {
  const table = newTable([]);
  for (const [label, value] of entries) table.push([label, String(value)]);
  io.stdout(`${table.toString()}\n`);
}

/** Writes `text` as one line on stdout. */
export function writeLine(io: CliIo, text: string): void {
  io.stdout(`${text}\n`);
}

// Colours off: output is read by scripts and tests as often as by people, and cli-table3
// would otherwise colour headings even when stdout is a file.
function newTable(head: string[]): Table.Table {
  return new Table({ head, style: { head: [], border: [], compact: true } });
}

/** An instant as ISO-8601 UTC, or `-` when absent. */
export function formatInstant(at: Date | null | undefined): string {
  return at == null ? '-' : at.toISOString();
}

/** A duration in the largest readable unit: `850ms`, `12.3s`, `4m 05s`, `2h 03m`, `3d 04h`; `-` when absent. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms == null) return '-';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const totalSeconds = Math.round(ms / 1000);
  if (totalSeconds < 3600) return `${Math.floor(totalSeconds / 60)}m ${pad2(totalSeconds % 60)}s`;
  const totalMinutes = Math.floor(totalSeconds / 60);
  if (totalMinutes < 48 * 60) return `${Math.floor(totalMinutes / 60)}h ${pad2(totalMinutes % 60)}m`;
  const totalHours = Math.floor(totalMinutes / 60);
  return `${Math.floor(totalHours / 24)}d ${pad2(totalHours % 24)}h`;
}

/** A value that may be absent, as text or `-`. */
export function orDash(value: string | number | null | undefined): string {
  return value == null || value === '' ? '-' : String(value);
}

function pad2(value: number): string {
  return String(value).padStart(2, '0');
}
