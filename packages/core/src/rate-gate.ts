import type { RateLimitedStart, RateLimitedStartResult } from './execution-store.js';
import { deferredUntil, rateWindowMs } from './flow-control.js';

/*
 * The rule of rate-limit buckets, in one place for both adapters: which of a batch of attempts
 * start, and until when the others wait. Written as a generator of the reads and writes it
 * needs (as the admission of concurrency groups is), so that SQLite runs it synchronously
 * inside BEGIN IMMEDIATE and Postgres asynchronously under the buckets' advisory locks.
 */

/** What the gate asks the adapter for, and what each step answers. */
export type RateGateStep =
  /** Forget the bucket's expired starts, then count those after `from` (answer: a number). */
  | { kind: 'count'; bucket: string; from: Date }
  /** Record `n` starts now in the bucket, each counting for `windowMs` (answer: nothing). */
  | { kind: 'record'; bucket: string; n: number; windowMs: number }
  /** The start at `offset` (oldest first) of those after `from` (answer: its Date). */
  | { kind: 'nthStart'; bucket: string; from: Date; offset: number }
  /** `n` more tasks wait for the instant `roomAt` (answer: how many waited for it before them). */
  | { kind: 'joinHerd'; bucket: string; roomAt: Date; n: number }
  /** Give request `index`'s task back unstarted until `availableAt` (answer: nothing). */
  | { kind: 'giveBack'; index: number; availableAt: Date };

/**
 * Decides a batch of rate-limited starts at `now` (see ExecutionStore.startRateLimited): per
 * bucket, in request order, the held leases start while the window has room; the rest wait
 * for the instant it has room again, spread a window apart per `limit` of them (the herd).
 * `held(i)` says whether request `i`'s attempt still holds its lease. Returns the results in
 * request order.
 */
export function* rateGate(
  requests: readonly RateLimitedStart[],
  held: (index: number) => boolean,
  now: Date,
): Generator<RateGateStep, RateLimitedStartResult[], unknown> {
  const results: RateLimitedStartResult[] = requests.map(() => ({ status: 'lost' }));
  const byBucket = new Map<string, number[]>();
  for (const [index, request] of requests.entries()) {
    if (!held(index)) continue;
    byBucket.set(request.bucket, [...(byBucket.get(request.bucket) ?? []), index]);
  }
  for (const [bucket, indexes] of byBucket) {
    const rule = requests[indexes[0]!]!;
    const windowMs = rateWindowMs(rule);
    const from = new Date(now.getTime() - windowMs);
    const started = (yield { kind: 'count', bucket, from }) as number;
    const room = Math.max(0, Math.min(indexes.length, rule.limit - started));
    if (room > 0) {
      yield { kind: 'record', bucket, n: room, windowMs };
      for (const index of indexes.slice(0, room)) results[index] = { status: 'started' };
    }
    const waiting = indexes.slice(room);
    if (waiting.length === 0) continue;
    // Room for one more when the start at (count - limit) leaves the window.
    const oldest = (yield { kind: 'nthStart', bucket, from, offset: started + room - rule.limit }) as Date;
    const roomAt = new Date(oldest.getTime() + windowMs);
    const before = (yield { kind: 'joinHerd', bucket, roomAt, n: waiting.length }) as number;
    for (const [position, index] of waiting.entries()) {
      const availableAt = deferredUntil(roomAt, before + position, rule);
      yield { kind: 'giveBack', index, availableAt };
      results[index] = { status: 'deferred', availableAt };
    }
  }
  return results;
}
