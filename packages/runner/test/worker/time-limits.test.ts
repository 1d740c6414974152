import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { TimeLimits } from '../../src/worker/time-limits.js';

const MODULE = resolve(import.meta.dirname, '../../src/worker/time-limits.ts');

/** Runs `body` in a Node process of its own with `limits` (a TimeLimits) in scope; what it printed. */
async function inProcess(body: string): Promise<string> {
  const script = `import { TimeLimits } from ${JSON.stringify(MODULE)}; const limits = new TimeLimits(); ${body}`;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', '--conditions=source', '--input-type=module', '-e', script],
    { timeout: 60_000 },
  );
  return stdout.trim();
}

describe('TimeLimits', () => {
  it('expires limits in the order they end, whatever the order they started in, and never a cleared one', async () => {
    const limits = new TimeLimits();
    const expired: string[] = [];
    const all = new Promise<void>((done) => {
      const note = (name: string) => () => {
        expired.push(name);
        if (expired.length === 3) done();
      };
      limits.start({}, 60, note('third'));
      const cleared = {};
      limits.start(cleared, 5, note('cleared'));
      limits.start({}, 20, note('second'));
      limits.start({}, 0, note('first'));
      limits.clear(cleared);
    });
    await all;
    expect(expired).toEqual(['first', 'second', 'third']);
  });

  it('arms again for limits still running after the one it was armed for ended early', async () => {
    const limits = new TimeLimits();
    const first = {};
    limits.start(first, 10, () => expect.unreachable('cleared before it ended'));
    const later = new Promise<string>((done) => limits.start({}, 40, () => done('expired')));
    limits.clear(first);
    await expect(later).resolves.toBe('expired');
  });

  it('keeps the process alive while a limit runs, and not once every limit is cleared', async () => {
    await expect(inProcess(`limits.start({}, 50, () => console.log('expired'));`)).resolves.toBe('expired');
    // A process that still held a timer for a cleared hour-long limit would not exit before execFile's timeout.
    await expect(
      inProcess(
        `const key = {}; limits.start(key, 3_600_000, () => console.log('expired')); limits.clear(key); console.log('exited');`,
      ),
    ).resolves.toBe('exited');
  });

  it('holds a limit longer than setTimeout can and never expires an infinite one', async () => {
    await expect(
      inProcess(
        `limits.start({}, 2 ** 31 + 1, () => console.log('long expired')); limits.start({}, Infinity, () => console.log('infinite expired'));` +
          ` limits.start({}, 30, () => { console.log('short expired'); process.exit(0); });`,
      ),
    ).resolves.toBe('short expired');
  });
});
