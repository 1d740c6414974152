import { afterEach, describe, expect, it } from 'vitest';
import { BackgroundLoop, silentLogger } from '../src/index.js';

class CountingLoop extends BackgroundLoop {
  ticks = 0;
  constructor(readonly nextWorkInMs: () => number | undefined) {
    super({ name: 'test', intervalMs: 60_000, logger: silentLogger });
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

describe('BackgroundLoop', () => {
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
