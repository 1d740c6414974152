import type { TaskResult } from './executor.js';
import type { WorkflowTaskInfo } from './workflow-store.js';

/*
 * A wait task that waits for its signal, as the CLI and the dashboard show it. Task rows do not
 * keep the signal's name for readers: it comes from the stored definition (WorkflowInfo), so a
 * process without the task code can tell which signal a task waits for.
 */

/** What a waiting wait task waits for: its signal, and until when. */
export interface SignalWait {
  /** The signal's name (`waitFor.signal`). */
  signal: string;
  /** When the wait times out; null when it never does, or before its first wait set the deadline. */
  waitsUntil: Date | null;
  /** Its `waitFor.timeoutMs`; null when it waits as long as it takes. */
  timeoutMs: number | null;
}

/**
 * The signal a task waits for now: a wait task (its definition has `waitFor`) that is `ready`,
 * so a signal would complete it. Null for any other task, or when `definition` is unknown.
 */
export function signalWaitOf(
  task: Pick<TaskResult, 'status' | 'waitsUntil'>,
  definition: Pick<WorkflowTaskInfo, 'waitFor'> | undefined,
): SignalWait | null {
  const waitFor = definition?.waitFor;
  if (waitFor == null || task.status !== 'ready') return null;
  return { signal: waitFor.signal, waitsUntil: task.waitsUntil ?? null, timeoutMs: waitFor.timeoutMs ?? null };
}

/**
 * A signal wait in a few words: `waiting for signal approved (until <time>)`, or `(no timeout)`;
 * before its first wait has set the deadline, the bare `waiting for signal approved`.
 * @param formatTime how the caller shows an instant elsewhere (ISO in the CLI, a UTC date on pages).
 */
export function describeSignalWait(wait: SignalWait, formatTime: (at: Date) => string): string {
  const until =
    wait.waitsUntil !== null
      ? ` (until ${formatTime(wait.waitsUntil)})`
      : wait.timeoutMs === null
        ? ' (no timeout)'
        : '';
  return `waiting for signal ${wait.signal}${until}`;
}
