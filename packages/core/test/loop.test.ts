import { afterEach, describe, expect, it } from 'vitest';
import { BackgroundLoop, MAX_TIMER_MS, setLongTimeout, silentLogger, sleep } from '../src/index.js';

class CountingLoop extends BackgroundLoop {
  ticks = 0;
  constructor(
    readonly nextWorkInMs: () => number | undefined,
    intervalMs = 60_000,
  ) {
    super({ name: 'test', intervalMs, logger: silentLogger });
  }
  protected async tick(): Promise<number | undefined> {
    this.ticks += 1;
    return this.nextWorkInMs();
  }
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

const loops: BackgroundLoop[] = [];
afterEach(async () => {
  await Promise.all(loops.splice(0).map((loop) => loop.stop()));
});

/** A logger that keeps every line: [level, fields, message]. */
function recordingLogger() {
  const lines: Array<[string, Record<string, unknown>, string]> = [];
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => {
    lines.push([level, fields, message]);
  };
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

class FlakyLoop extends BackgroundLoop {
  ticks = 0;
  constructor(
    readonly failingTicks: number,
    logger: ReturnType<typeof recordingLogger>['logger'],
  ) {
    super({ name: 'flaky', intervalMs: 1, maxBackoffMs: 2, logger });
  }
  protected async tick(): Promise<void> {
    this.ticks += 1;
    if (this.ticks <= this.failingTicks) throw new Error(`database down (tick ${this.ticks})`);
  }
}

describe('BackgroundLoop', () => {
  it('logs each failed tick as an error and the recovery after them once', async () => {
    const { lines, logger } = recordingLogger();
    const loop = new FlakyLoop(3, logger);
    loops.push(loop);
    loop.start();
    await until(() => loop.ticks >= 6);
    await loop.stop();
    expect(lines.filter(([level]) => level === 'error')).toEqual(
      [1, 2, 3].map((tick) => [
        'error',
        { err: expect.objectContaining({ message: `database down (tick ${tick})` }), loop: 'flaky' },
        'background loop tick failed',
      ]),
    );
    expect(lines.filter(([, , message]) => message === 'background loop recovered')).toEqual([
      ['info', { loop: 'flaky', failures: 3 }, 'background loop recovered'],
    ]);
  });

  it('starts the next tick when wakeIn asks, long before its one-minute interval', async () => {
    const loop = new CountingLoop(() => undefined);
    loops.push(loop);
    loop.start();
    await until(() => loop.ticks === 1);
    loop.wakeIn(10);
    await until(() => loop.ticks === 2);
    expect(loop.ticks).toBe(2);
  });

  it('starts the next tick at the delay its tick resolved with', async () => {
    const loop = new CountingLoop(() => 5);
    loops.push(loop);
    loop.start();
    await until(() => loop.ticks >= 3);
    expect(loop.ticks).toBeGreaterThanOrEqual(3);
  });
});

/** Node's warning for a setTimeout delay past 2³¹ − 1 ms, which it then runs after 1 ms. */
function overflowWarnings(): { count(): number; stop(): void } {
  let count = 0;
  const listener = (warning: Error) => {
    if (warning.name === 'TimeoutOverflowWarning') count += 1;
  };
  process.on('warning', listener);
  return { count: () => count, stop: () => process.off('warning', listener) };
}

/** A real pause, long enough for a timer that wrongly fires after 1 ms to have fired many times over. */
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('waits of 2³¹ ms or more', () => {
  it('sleep(2 ** 31) keeps waiting until its signal aborts', async () => {
    const warnings = overflowWarnings();
    const abort = new AbortController();
    let slept = false;
    const sleeping = sleep(2 ** 31, abort.signal).then(() => {
      slept = true;
    });
    await pause(100);
    expect(slept).toBe(false);
    abort.abort();
    await sleeping;
    expect(slept).toBe(true);
    await pause(0);
    warnings.stop();
    expect(warnings.count()).toBe(0);
  });

  it('setLongTimeout never fires for Infinity and fires a short delay once', async () => {
    const fired: string[] = [];
    const cancelForever = setLongTimeout(() => fired.push('forever'), Number.POSITIVE_INFINITY);
    const cancelLong = setLongTimeout(() => fired.push('long'), MAX_TIMER_MS + 1);
    setLongTimeout(() => fired.push('short'), 5);
    await pause(100);
    cancelForever();
    cancelLong();
    expect(fired).toEqual(['short']);
  });

  it('a loop whose interval is 2 ** 31 ms waits between ticks instead of spinning', async () => {
    const warnings = overflowWarnings();
    const loop = new CountingLoop(() => undefined, 2 ** 31);
    loops.push(loop);
    loop.start();
    await until(() => loop.ticks === 1);
    await pause(100);
    expect(loop.ticks).toBe(1);
    loop.nudge();
    await until(() => loop.ticks === 2);
    warnings.stop();
    expect(warnings.count()).toBe(0);
  });
});
