import { describe, expect, it } from 'vitest';
import { describeSignalWait, signalWaitOf } from '../src/signal-wait.js';

describe('signalWaitOf', () => {
  const until = new Date('2026-11-27T09:00:00Z');

  it('finds the signal of a ready wait task, with its deadline once it has waited', () => {
    const definition = { waitFor: { signal: 'approved', timeoutMs: 60_000 } };
    expect(signalWaitOf({ status: 'ready', waitsUntil: until }, definition)).toEqual({
      signal: 'approved',
      waitsUntil: until,
      timeoutMs: 60_000,
    });
    expect(signalWaitOf({ status: 'ready' }, definition)).toEqual({
      signal: 'approved',
      waitsUntil: null,
      timeoutMs: 60_000,
    });
  });

  it('finds none for a wait task that is not ready, a task with code, or an unknown definition', () => {
    const definition = { waitFor: { signal: 'approved' } };
    expect(signalWaitOf({ status: 'not_started' }, definition)).toBeNull();
    expect(signalWaitOf({ status: 'completed' }, definition)).toBeNull();
    expect(signalWaitOf({ status: 'ready' }, { waitFor: null })).toBeNull();
    expect(signalWaitOf({ status: 'ready' }, {})).toBeNull();
    expect(signalWaitOf({ status: 'ready' }, undefined)).toBeNull();
  });
});

describe('describeSignalWait', () => {
  it('says the signal and its deadline in the caller’s time format, or that there is none', () => {
    const until = new Date('2026-11-27T09:00:00Z');
    expect(describeSignalWait({ signal: 'approved', waitsUntil: until, timeoutMs: 1 }, (at) => at.toISOString())).toBe(
      'waiting for signal approved (until 2026-11-27T09:00:00.000Z)',
    );
    expect(describeSignalWait({ signal: 'approved', waitsUntil: null, timeoutMs: null }, String)).toBe(
      'waiting for signal approved (no timeout)',
    );
    expect(describeSignalWait({ signal: 'approved', waitsUntil: null, timeoutMs: 60_000 }, String)).toBe(
      'waiting for signal approved',
    );
  });
});
