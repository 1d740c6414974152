import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A child process running a test fixture, speaking one JSON object per stdout line. */
export interface Worker {
  readonly child: ChildProcess;
  /** Every JSON line it printed, parsed. */
  readonly messages: Record<string, unknown>[];
  /** Resolves when it printed `{"ready": true}`; rejects if it exited first. */
  readonly ready: Promise<void>;
  /** Resolves when it exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

/** Starts `test/fixtures/<fixture>` as `node --import tsx --conditions=source <fixture> ...args`. */
export function spawnFixture(fixture: string, args: string[], env: Record<string, string>): Worker {
  const file = fileURLToPath(new URL(`../fixtures/${fixture}`, import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', file, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const messages: Record<string, unknown>[] = [];
  const exited = once(child, 'close').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  const ready = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.startsWith('{')) return;
      const message = JSON.parse(line) as Record<string, unknown>;
      messages.push(message);
      if (message.ready === true) resolve();
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`${fixture} ${args.join(' ')} exited (${code ?? signal}) before it was ready: ${stderr}`)),
    );
  });
  ready.catch(() => {}); // the caller decides whether an early exit matters
  return { child, messages, ready, exited, stderr: () => stderr };
}

/** True while the process has not exited. */
export function isAlive(worker: Worker): boolean {
  return worker.child.exitCode === null && worker.child.signalCode === null;
}

/** Sends `signal` (unless it already exited) and waits for the exit. */
export async function stopWorker(worker: Worker, signal: NodeJS.Signals = 'SIGTERM') {
  if (isAlive(worker)) worker.child.kill(signal);
  return worker.exited;
}

/** Polls `read` until `done` holds; throws with the last value after `timeoutMs`. */
export async function until<T>(
  what: string,
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (performance.now() > deadline)
      throw new Error(`gave up waiting for ${what}; last value ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
