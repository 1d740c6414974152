import { type ConcurrencyRule, DEFAULT_ON_LIMIT, DEFAULT_PRIORITY, type WaitingFor } from './flow-control.js';

/*
 * Flow control in words, for operators: the CLI and the dashboard say the same thing in the
 * same way, and each formats instants as it does everywhere else (hence `formatTime`).
 */

/**
 * Why a pending pipeline waits, in a few words: `waiting for sync/customer=acme (2/2 active)`
 * for a full concurrency group, `starts at <time>` for a delayed start.
 * @param formatTime how the caller shows an instant elsewhere (ISO in the CLI, a UTC date on pages).
 */
export function describeWaitingFor(waitingFor: WaitingFor, formatTime: (at: Date) => string): string {
  if (waitingFor.kind === 'runAt') return `starts at ${formatTime(waitingFor.runAt)}`;
  return `waiting for ${waitingFor.group} (${waitingFor.active}/${waitingFor.limit} active)`;
}

/**
 * A concurrency rule in words: `1 at a time per customer`, `2 at a time in all`, and what
 * happens over the limit when it is not the default (`; over the limit: cancel_newest`).
 */
export function describeConcurrencyRule(rule: ConcurrencyRule): string {
  const scope = rule.key === undefined ? 'in all' : `per ${rule.key}`;
  const onLimit = rule.onLimit ?? DEFAULT_ON_LIMIT;
  return `${rule.limit} at a time ${scope}${onLimit === DEFAULT_ON_LIMIT ? '' : `; over the limit: ${onLimit}`}`;
}

/** A stored priority as shown: a workflow that names none has the default (stored as null). */
export function effectivePriority(priority: number | null): number {
  return priority ?? DEFAULT_PRIORITY;
}
