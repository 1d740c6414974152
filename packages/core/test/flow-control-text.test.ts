import { describe, expect, it } from 'vitest';
import { describeConcurrencyRule, describeWaitingFor, effectivePriority } from '../src/flow-control-text.js';

describe('describeWaitingFor', () => {
  it('names a full group with its occupancy', () => {
    const waiting = { kind: 'concurrency', group: 'sync/customer=acme', active: 2, limit: 2 } as const;
    expect(describeWaitingFor(waiting, String)).toBe('waiting for sync/customer=acme (2/2 active)');
  });

  it('tells a delayed start in the caller’s time format', () => {
    const runAt = new Date('2026-11-27T09:00:00Z');
    expect(describeWaitingFor({ kind: 'runAt', runAt }, (at) => at.toISOString())).toBe(
      'starts at 2026-11-27T09:00:00.000Z',
    );
  });
});

describe('describeConcurrencyRule', () => {
  it('says the limit per key, or in all for a workflow-wide rule', () => {
    expect(describeConcurrencyRule({ key: 'customer', limit: 1, onLimit: 'queue' })).toBe('1 at a time per customer');
    expect(describeConcurrencyRule({ limit: 2 })).toBe('2 at a time in all');
  });

  it('names what happens over the limit only when it is not queueing', () => {
    expect(describeConcurrencyRule({ key: 'tenant.id', limit: 3, onLimit: 'cancel_newest' })).toBe(
      '3 at a time per tenant.id; over the limit: cancel_newest',
    );
  });
});

describe('effectivePriority', () => {
  it('reads a stored null as the default priority', () => {
    expect(effectivePriority(null)).toBe(0);
    expect(effectivePriority(-5)).toBe(-5);
  });
});
