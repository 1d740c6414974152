import { isOrreryError } from './errors.js';

/** How a task is retried after a failed attempt. */
export interface RetryPolicy {
  /** Total attempts, the first included. @default 3 */
  maxAttempts?: number;
  /** @default 'exponential' */
  backoff?: 'fixed' | 'linear' | 'exponential';
  /** Delay before the second attempt. @default 1000 */
  initialDelayMs?: number;
  /** Cap on any delay, applied after jitter. @default 60000 */
  maxDelayMs?: number;
  /** Multiply each delay by a random factor in [0.75, 1.25]. @default true */
  jitter?: boolean;
  /** Whether an error is worth another attempt. @default every error but NonRetryableError */
  retryOn?: (error: unknown) => boolean;
}

/** The defaults of {@link RetryPolicy}. */
export const RETRY_DEFAULTS = {
  maxAttempts: 3,
  backoff: 'exponential',
  initialDelayMs: 1000,
  maxDelayMs: 60_000,
  jitter: true,
} as const;

/**
 * Milliseconds to wait after failed attempt `failedAttempts` (1-based) before the next.
 * fixed: d; linear: d·n; exponential: d·2ⁿ⁻¹; then jitter ×U[0.75,1.25], then the cap.
 */
export function retryDelayMs(policy: RetryPolicy | undefined, failedAttempts: number, random = Math.random): number {
  const initial = policy?.initialDelayMs ?? RETRY_DEFAULTS.initialDelayMs;
  const backoff = policy?.backoff ?? RETRY_DEFAULTS.backoff;
  const n = Math.max(1, failedAttempts);
  let delay = backoff === 'fixed' ? initial : backoff === 'linear' ? initial * n : initial * 2 ** (n - 1);
  if (policy?.jitter ?? RETRY_DEFAULTS.jitter) delay *= 0.75 + random() * 0.5;
  return Math.round(Math.min(delay, policy?.maxDelayMs ?? RETRY_DEFAULTS.maxDelayMs));
}

/** True when a task that failed `failedAttempts` times with `error` gets another attempt. */
export function shouldRetry(policy: RetryPolicy | undefined, failedAttempts: number, error: unknown): boolean {
  if (failedAttempts >= (policy?.maxAttempts ?? RETRY_DEFAULTS.maxAttempts)) return false;
  if (policy?.retryOn) return policy.retryOn(error);
  return !isOrreryError(error, 'NON_RETRYABLE');
}
