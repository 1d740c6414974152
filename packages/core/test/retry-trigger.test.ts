import { describe, expect, it } from 'vitest';
import { isTriggerMet, NonRetryableError, retryDelayMs, shouldRetry } from '../src/index.js';

describe('retryDelayMs', () => {
  const noJitter = { jitter: false, initialDelayMs: 100 } as const;
  it('grows fixed, linearly or exponentially', () => {
    expect([1, 2, 3].map((n) => retryDelayMs({ ...noJitter, backoff: 'fixed' }, n))).toEqual([100, 100, 100]);
    expect([1, 2, 3].map((n) => retryDelayMs({ ...noJitter, backoff: 'linear' }, n))).toEqual([100, 200, 300]);
    expect([1, 2, 3].map((n) => retryDelayMs({ ...noJitter, backoff: 'exponential' }, n))).toEqual([100, 200, 400]);
  });

  it('applies jitter in [0.75, 1.25] and caps after jitter', () => {
    expect(retryDelayMs({ initialDelayMs: 1000 }, 1, () => 0)).toBe(750);
    expect(retryDelayMs({ initialDelayMs: 1000 }, 1, () => 1)).toBe(1250);
    expect(retryDelayMs({ initialDelayMs: 1000, maxDelayMs: 1100 }, 1, () => 1)).toBe(1100);
    expect(retryDelayMs(undefined, 10, () => 0.5)).toBe(60_000);
  });
});

describe('shouldRetry', () => {
  it('retries until maxAttempts, never a NonRetryableError, and honours retryOn', () => {
    expect(shouldRetry(undefined, 2, new Error('x'))).toBe(true);
    expect(shouldRetry(undefined, 3, new Error('x'))).toBe(false);
    expect(shouldRetry({ maxAttempts: 5 }, 1, new NonRetryableError('no'))).toBe(false);
    expect(shouldRetry({ retryOn: (e) => e instanceof TypeError }, 1, new Error('x'))).toBe(false);
    expect(shouldRetry({ retryOn: (e) => e instanceof TypeError }, 1, new TypeError('x'))).toBe(true);
  });
});

describe('isTriggerMet', () => {
  it.each([
    ['all_success', ['completed', 'completed'], true],
    ['all_success', ['completed', 'skipped'], false],
    ['all_done', ['failed', 'skipped'], true],
    ['one_success', ['failed', 'completed'], true],
    ['one_success', ['failed', 'skipped'], false],
    ['one_failed', ['completed', 'failed'], true],
    ['one_failed', ['completed', 'skipped'], false],
    ['none_failed', ['completed', 'skipped'], true],
    ['none_failed', ['completed', 'failed'], false],
  ] as const)('%s over %j is %s', (rule, statuses, expected) => {
    expect(isTriggerMet(rule, statuses)).toBe(expected);
  });
});
