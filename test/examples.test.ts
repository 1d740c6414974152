import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName, postgresUrl } from './support/postgres.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node --import tsx --conditions=source <script>` from the repository root, as the npm
 * scripts do, and resolves when it exits. Past `timeoutMs` its whole process group (the
 * example and any workers it spawned) is killed.
 */
function runScript(script: string, timeoutMs: number, env: Record<string, string> = {}): Promise<Finished> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', script], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += String(chunk);
  });
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), timeoutMs);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The exit code, with the output attached so that a failure shows what the script printed. */
function exitCodeOf(run: Finished): { code: number | null; output: string } {
  return { code: run.code, output: run.code === 0 ? '' : `${run.stdout}\n${run.stderr}` };
}

describe('the demo and the examples', () => {
  const schemas: string[] = [];

  afterAll(async () => {
    for (const schema of schemas) await dropSchema(schema);
  });

  it('demo: survives a SIGKILL mid-task and reports every slot fired once, none lost or duplicated', async () => {
    const run = await runScript('examples/demo/main.ts', 58_000);
    expect(exitCodeOf(run)).toEqual({ code: 0, output: '' });
    const result = /Result: (\d+) occurrences fired, (\d+) pipelines completed, (\d+) lost, (\d+) duplicates/.exec(
      run.stdout,
    );
    expect(result?.slice(3)).toEqual(['0', '0']);
    const [fired, completed] = [Number(result?.[1]), Number(result?.[2])];
    expect(fired).toBeGreaterThanOrEqual(6);
    expect(completed).toBe(fired);
    expect(run.stdout).toMatch(/SIGKILL w1 \(pid \d+\) while .*transform-a \(attempt 1\)/);
    expect(run.stdout).toContain('transform-a: attempt 2, taking over from the killed worker');
    expect(run.stdout).toContain('transform-b: attempt 1 failed');
    expect(run.stdout).toContain('w2  worker shut down gracefully');
    expect(run.stdout).toMatch(/lost \(due slot, no handed_off row\)\s+0\n/);
    expect(run.stdout).toMatch(/duplicates \(slot with > 1 pipeline\)\s+0\n/);
  }, 60_000);

  it('quickstart: executes the workflow to completion and adds a schedule', async () => {
    const run = await runScript('examples/quickstart.ts', 20_000);
    expect(exitCodeOf(run)).toEqual({ code: 0, output: '' });
    expect(run.stdout).toMatch(/^completed: \{.*"total":12,"sent":true\}$/m);
    expect(run.stdout).toMatch(/schedule "nightly" next runs at \d{4}-\d\d-\d\dT\d\d:30:00\.000Z/);
  }, 25_000);

  it('backfill: creates every slot of the range once, then finds them all existing', async () => {
    const run = await runScript('examples/backfill.ts', 20_000);
    expect(exitCodeOf(run)).toEqual({ code: 0, output: '' });
    expect(run.stdout).toContain('first backfill:  created 7, existing 0');
    expect(run.stdout).toContain('second backfill: created 0, existing 7');
    expect(run.stdout.match(/backfill handed_off {2}pipeline completed/g)).toHaveLength(7);
  }, 25_000);

  it('catchup-overlap: each catch-up policy runs what it promises, and overlap skip skips', async () => {
    const run = await runScript('examples/catchup-overlap.ts', 20_000);
    expect(exitCodeOf(run)).toEqual({ code: 0, output: '' });
    expect(run.stdout).toMatch(/skip\s+ran 0 of the 9 missed slots\s+ledger: 00:02 missed \(one row for 9 slots\)/);
    expect(run.stdout).toMatch(/run_once\s+ran 1 of the 9 missed slots .*00:10 handed_off\/catchup/);
    expect(run.stdout).toMatch(/run_all\s+ran 9 of the 9 missed slots\s+ledger: 00:02–00:10 handed_off\/catchup ×9/);
    expect(run.stdout).toContain(
      '00:12 handed_off/schedule, 00:13–00:14 skipped/schedule ×2, 00:15 handed_off/schedule',
    );
  }, 25_000);

  it('multi-instance: two workers on PostgreSQL share the schedules, each occurrence fired once', async () => {
    const schema = freshSchemaName();
    schemas.push(schema);
    const run = await runScript('examples/multi-instance.ts', 30_000, {
      ORRERY_DATABASE_URL: postgresUrl(),
      ORRERY_SCHEMA: schema,
    });
    expect(exitCodeOf(run)).toEqual({ code: 0, output: '' });
    expect(run.stdout).toContain('Result: 0 lost, 0 duplicates');
    expect(run.stdout).toContain('occurrences due 20, pipelines completed 20');
    const fired = [...run.stdout.matchAll(/(w[12]): fired (\d+) occurrences/g)].map((m) => [m[1], Number(m[2])]);
    expect(fired).toHaveLength(2);
    expect(fired.reduce((sum, [, n]) => sum + Number(n), 0)).toBe(20);
    expect(fired.every(([, n]) => Number(n) > 0)).toBe(true);
  }, 35_000);
});
