import {
  assertContextSize,
  type ClaimedTask,
  type Context,
  contextDelta,
  NonRetryableError,
  RETRY_DEFAULTS,
  type RetryPolicy,
  replaceNul,
  retryDelayMs,
  shouldRetry,
  type TaskOutcome,
  type TaskRow,
  taskOutcomeColumns,
} from '@orreryjs/core';

/** Total attempts a retry policy allows. */
export function maxAttempts(policy: RetryPolicy | undefined): number {
  return policy?.maxAttempts ?? RETRY_DEFAULTS.maxAttempts;
}

/**
 * A thrown value as the text stored in `error`: its message on the first line, then the
 * stack frames of an Error, so that an operator sees where a task failed. NUL characters
 * (which PostgreSQL cannot store) become U+FFFD, so that no error a task throws can make its
 * outcome uncommittable.
 */
export function errorMessage(error: unknown): string {
  const frames = stackFrames(error);
  return replaceNul(frames === '' ? describeError(error) : `${describeError(error)}\n${frames}`);
}

/** The `at …` lines of an Error's stack (V8 puts the message first, which we already have). */
function stackFrames(error: unknown): string {
  if (!(error instanceof Error) || typeof error.stack !== 'string') return '';
  return error.stack
    .split('\n')
    .filter((line) => /^\s+at /.test(line))
    .join('\n');
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    const message = String(error.message);
    return error.name === 'Error' || message.startsWith(error.name) ? message : `${error.name}: ${message}`;
  }
  try {
    return String(error);
  } catch {
    return Object.prototype.toString.call(error);
  }
}

/**
 * The outcome of a successful attempt: the keys it set and deleted. A context grown past
 * `maxContextBytes` fails the attempt without a retry, since another run would write the same.
 * @throws NonRetryableError (with the ContextError as `cause`) for an oversized context.
 */
export function completedOutcome(context: Context, taskId: string, maxContextBytes: number): TaskOutcome {
  try {
    assertContextSize(context.toJSON(), maxContextBytes, `The context written by task "${taskId}"`);
  } catch (error) {
    throw new NonRetryableError(errorMessage(error), { cause: error });
  }
  return { status: 'completed', output: contextDelta(context) };
}

/**
 * The outcome of a failed attempt: another attempt after the policy's delay when the policy
 * allows it (`failedAttempts` counts this one), else failed.
 */
export function failedOutcome(
  policy: RetryPolicy | undefined,
  failedAttempts: number,
  error: unknown,
  message: string,
  now: Date,
): TaskOutcome {
  if (!shouldRetry(policy, failedAttempts, error)) return { status: 'failed', error: message };
  const availableAt = new Date(now.getTime() + retryDelayMs(policy, failedAttempts));
  return { status: 'retry', error: message, availableAt };
}

/**
 * Every task row of a pipeline whose last task this process just committed, without reading
 * them back: the tasks that were terminal when it was claimed plus its own row as the commit
 * wrote it (core's {@link taskOutcomeColumns}, the rule the adapters write by). Null when some
 * other task ended after the claim (the snapshot is incomplete).
 */
export function finishedTaskRows(
  claimed: ClaimedTask,
  outcome: TaskOutcome,
  now: Date,
  taskCount: number,
): TaskRow[] | null {
  // A failed attempt's history entry is written by the statement (with the row's start): read it back.
  if (claimed.terminalTasks.length + 1 !== taskCount || outcome.status === 'retry' || outcome.status === 'failed') {
    return null;
  }
  const { task } = claimed;
  const { status, output, error, completedAt } = taskOutcomeColumns(outcome, now);
  const own: TaskRow = {
    ...task,
    status,
    output,
    error,
    // The commit records the start of a task claimed ahead (a renewal may have recorded it a little earlier).
    startedAt: task.startedAt ?? now,
    leaseOwner: null,
    leaseExpiresAt: null,
    completedAt,
  };
  return [...claimed.terminalTasks, own].sort((a, b) => a.position - b.position);
}
