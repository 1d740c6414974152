import { and, lt, sql } from 'drizzle-orm';
import { bind } from '../codec.js';
import type { PostgresTables } from '../schema.js';

/*
 * The cron store's shared predicates: every file of the port takes them from here, so that no
 * file borrows another's and no two files import each other.
 */

/** Enabled schedules: a literal, not a bound parameter, so that a generic plan can use the due index. */
export function isEnabled({ cronSchedules: s }: PostgresTables) {
  return sql`${s.enabled}`;
}

/** `claimed` rows: a literal, so that a generic plan can use the recovery index. */
export function isClaimed({ cronExecutions: c }: PostgresTables) {
  return sql`${c.status} = 'claimed'`;
}

/** `buffered` rows: a literal, so that a generic plan can use the buffered index. */
export function isBuffered({ cronExecutions: c }: PostgresTables) {
  return sql`${c.status} = 'buffered'`;
}

/**
 * A `claimed` row is lost once both its fire time and its claim are older than the lost
 * threshold: a slot claimed late (after an outage) gets the whole threshold for its handoff.
 */
export function isLost({ cronExecutions: c }: PostgresTables) {
  return and(lt(c.fireAt, bind(c.fireAt, 'lostBefore')), lt(c.claimedAt, bind(c.claimedAt, 'lostBefore')));
}
