import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectOneLineError, orrery } from './support/cli.js';

// A mistyped SQLite path must not leave files or folders behind: only migrate creates a
// database, and only in a folder that exists.
const folder = mkdtempSync(join(tmpdir(), 'orrery-cli-missing-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('a SQLite path whose file does not exist', () => {
  const typo = join(folder, 'typo', 'b.db');
  const url = `sqlite:${typo}`;

  it.each([
    [['schedules', 'list']],
    [['schedules', 'show', 'nightly']],
    [['executions', 'list']],
    [['workflows']],
    [['runners', 'list']],
    [['stats']],
  ])('orrery %j fails naming the path and pointing at orrery migrate, creating nothing', (args) => {
    const line = expectOneLineError(
      orrery([...args, '--database', url]),
      1,
      `SQLite database "${typo}" does not exist`,
    );
    expect(line).toContain('orrery migrate');
    expect(line).not.toContain('mustExist');
    expect(readdirSync(folder)).toEqual([]);
  });

  it('migrate refuses a folder that does not exist, saying so, and creates nothing', () => {
    const line = expectOneLineError(orrery(['migrate', '--database', url]), 1, 'does not exist');
    expect(line).toContain(join(folder, 'typo'));
    expect(readdirSync(folder)).toEqual([]);
  });

  it('migrate creates the file in a folder that exists', () => {
    const run = orrery(['migrate', '--database', `sqlite:${join(folder, 'ok.db')}`]);
    expect(run.status, run.stderr).toBe(0);
    expect(existsSync(join(folder, 'ok.db'))).toBe(true);
  });
});
