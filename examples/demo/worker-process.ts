/**
 * Starting and stopping the demo's worker processes, and reading their JSON lines.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** One line a worker printed. */
export interface WorkerMessage {
  type: 'ready' | 'fired' | 'lost' | 'recovered' | 'abandoned' | 'task' | 'pipeline' | 'stopped';
  [key: string]: unknown;
}

export interface WorkerProcess {
  label: string;
  child: ChildProcess;
  /** Resolves with the worker's `ready` message (its runner is started). */
  ready: Promise<WorkerMessage>;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns `node --import tsx --conditions=source worker.ts` and hands each of its messages to `onMessage`. */
export function startWorker(
  label: string,
  env: Record<string, string>,
  onMessage: (label: string, message: WorkerMessage) => void,
): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', WORKER], {
    cwd: ROOT,
    env: { ...process.env, ...env, ORRERY_DEMO_WORKER: label },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr?.on('data', (chunk) => process.stderr.write(`[${label} stderr] ${chunk}`));
  const exited = once(child, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  const ready = new Promise<WorkerMessage>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let message: WorkerMessage;
      try {
        message = JSON.parse(line) as WorkerMessage;
      } catch {
        process.stdout.write(`[${label}] ${line}\n`);
        return;
      }
      if (message.type === 'ready') resolve(message);
      onMessage(label, message);
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`${label} exited before it was ready (${code ?? signal})`)),
    );
  });
  return { label, child, ready, exited };
}

/** Kills a worker that is still running (used on the way out after an error). */
export function killIfRunning(worker: WorkerProcess | undefined): void {
  if (worker && worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
}
