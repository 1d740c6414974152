import {
  assertContextSize,
  type Context,
  contextDelta,
  NonRetryableError,
  RETRY_DEFAULTS,
  type RetryPolicy,
  replaceNul,
  retryDelayMs,
  shouldRetry,
  type TaskOutcome,
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
