import { describe, expect, it } from 'vitest';
import { type CliIo, type Column, TABLE_WIDTH, writeTable } from '../src/output.js';

interface Row {
  id: string;
  name: string;
  error: string;
  extra: string;
}

const COLUMNS: readonly Column<Row>[] = [
  { header: 'ID', cell: (r) => r.id, narrow: (r) => r.id.slice(0, 8) },
  { header: 'Name', cell: (r) => r.name, shrinks: true },
  { header: 'Extra (UTC)', cell: (r) => r.extra, wideOnly: true },
  { header: 'Error', cell: (r) => r.error, shrinks: true },
];

const ROWS: Row[] = [
  {
    id: '1a2b3c4d-0000-4000-8000-000000000001',
    name: `workflow-${'n'.repeat(60)}`,
    error: `boom ${'e'.repeat(300)} end`,
    extra: '2026-01-02T03:04:05.000Z',
  },
  { id: '5e6f7a8b-0000-4000-8000-000000000002', name: 'short', error: '-', extra: '-' },
];

/** What writeTable printed, line by line. */
function table(wide: boolean): string[] {
  let out = '';
  const io: CliIo = { stdout: (text) => (out += text), stderr: () => undefined };
  writeTable(io, COLUMNS, ROWS, 'none', wide);
  return out.split('\n').filter((line) => line !== '');
}

describe('writeTable', () => {
  it(`fits ${TABLE_WIDTH} characters by default: narrow cells, no wide-only columns, long text cut with …`, () => {
    const lines = table(false);
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(TABLE_WIDTH);
    expect(lines.some((line) => line.length === TABLE_WIDTH)).toBe(true);
    expect(lines[1]).toMatch(/^│ ID +│ Name +│ Error +│$/);
    const first = lines.find((line) => line.includes('1a2b3c4d'))!;
    expect(first).not.toContain('1a2b3c4d-0000');
    expect(first).toMatch(/│ workflow-n+… +│ boom e+… +│$/);
    expect(lines.find((line) => line.includes('5e6f7a8b'))).toMatch(/│ short +│ - +│$/);
  });

  it('shows every column in full with wide', () => {
    const text = table(true).join('\n');
    for (const row of ROWS) for (const value of Object.values(row)) expect(text).toContain(value);
    expect(text).toContain('Extra (UTC)');
    expect(text).not.toContain('…');
  });

  it('leaves a table that fits as it is', () => {
    let out = '';
    const io: CliIo = { stdout: (text) => (out += text), stderr: () => undefined };
    writeTable(io, COLUMNS, [ROWS[1]!], 'none');
    expect(out).toContain('│ 5e6f7a8b │ short │ -     │');
  });
});
