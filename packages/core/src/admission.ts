import type { QueuedGroup } from './execution-store.js';
import type { PipelineGroup } from './flow-control.js';

/*
 * The admission rule of concurrency groups, in one place for both adapters: which queued
 * pipelines start when their groups have room. It is written as a generator of the reads it
 * needs, so that SQLite (synchronous, inside BEGIN IMMEDIATE) and Postgres (asynchronous,
 * under advisory locks) run the same decisions with their own statements.
 */

/** A queued pipeline as the admission reads it from a group's queue. */
export interface QueuedSlot {
  pipelineExecutionId: string;
  /** The group's limit as this pipeline's version declares it. */
  slotLimit: number;
  /** Every group of the pipeline (it starts only when all have room). */
  concurrency: PipelineGroup[] | null;
}

/** A queued pipeline at the head of one of the groups asked for (see `queueHeads`). */
export interface QueueHead extends QueuedSlot {
  group: string;
}

/**
 * What the admission asks the adapter for, and what each step answers. The reads are batched
 * over groups, so that an admission costs a few statements however many groups it serves.
 */
export type AdmissionStep =
  /**
   * Forget the slots of ended pipelines in these groups, then count each group's active
   * pipelines (answer: `{ group, active }[]`, groups with none left out).
   */
  | { kind: 'countActive'; groups: string[] }
  /**
   * `countActive` of these groups and the first `perGroup` of each one's queue, in admission
   * order, in one read: the first step of every admission (answer: {@link GroupsAndHeads}).
   */
  | { kind: 'countActiveWithHeads'; groups: string[]; perGroup: number }
  /** A further page of one group's queue in admission order (answer: `QueuedSlot[]`). */
  | { kind: 'queuePage'; group: string; offset: number }
  /** Lock a group outside the first set without waiting (answer: whether it was taken). */
  | { kind: 'tryLock'; group: string };

/** The answer to {@link AdmissionStep} `countActive`. */
export type ActiveCount = { group: string; active: number };

/** The answer to {@link AdmissionStep} `countActiveWithHeads`. */
export interface GroupsAndHeads {
  active: ActiveCount[];
  heads: QueueHead[];
}

/**
 * Decides which queued pipelines of `groups` (already locked by the caller) to admit: per
 * group in name order, its queue in order (higher priority, then oldest), while the group has
 * room for the head of its queue. A pipeline of several groups is admitted only when each has
 * room; one of its other groups that another admission holds is tried, never waited for, and
 * the pipeline is passed over this time. The heads of every full group's queue are read
 * together (`headSize` each); a group with room for more reads further pages of `pageSize`.
 * Returns the ids to admit.
 */
export function* admissionPlan(
  groups: readonly string[],
  headSize: number,
  pageSize: number,
): Generator<AdmissionStep, string[], unknown> {
  const active = new Map<string, number>();
  const locked = new Set<string>();
  const unavailable = new Set<string>();
  /** Groups now held by this admission, their counts about to be read. */
  const hold = (some: readonly string[]) => {
    for (const group of some) {
      locked.add(group);
      active.set(group, 0);
    }
  };
  const counted = (rows: readonly ActiveCount[]) => {
    for (const row of rows) active.set(row.group, Number(row.active));
  };
  function* take(some: string[]): Generator<AdmissionStep, void, unknown> {
    hold(some);
    counted((yield { kind: 'countActive', groups: some }) as ActiveCount[]);
  }
  hold(groups);
  // The groups asked for: their counts and the heads of their queues in one read.
  const first = (yield { kind: 'countActiveWithHeads', groups: [...groups], perGroup: headSize }) as GroupsAndHeads;
  counted(first.active);
  const heads = new Map<string, QueuedSlot[]>(groups.map((group) => [group, []]));
  for (const head of first.heads) heads.get(head.group)?.push(head);
  const admitted = new Set<string>();
  for (const group of groups) {
    let page = heads.get(group) ?? [];
    let size = headSize;
    let offset = 0;
    queue: for (;;) {
      for (const candidate of page) {
        if (admitted.has(candidate.pipelineExecutionId)) continue;
        // The head of the queue waits for room: nothing behind it in this group starts first.
        if ((active.get(group) ?? 0) >= candidate.slotLimit) break queue;
        const others = (candidate.concurrency ?? []).filter((other) => other.group !== group);
        let available = true;
        for (const other of others) {
          if (locked.has(other.group)) continue;
          if (unavailable.has(other.group) || !((yield { kind: 'tryLock', group: other.group }) as boolean)) {
            unavailable.add(other.group);
            available = false;
            break;
          }
          yield* take([other.group]);
        }
        if (!available || others.some((other) => (active.get(other.group) ?? 0) >= other.limit)) continue;
        admitted.add(candidate.pipelineExecutionId);
        for (const joined of [group, ...others.map((other) => other.group)]) {
          active.set(joined, (active.get(joined) ?? 0) + 1);
        }
      }
      if (page.length < size) break;
      offset += page.length;
      size = pageSize;
      page = (yield { kind: 'queuePage', group, offset }) as QueuedSlot[];
    }
  }
  return [...admitted];
}

/** Runs a generator of steps with a synchronous adapter (SQLite). */
export function runSteps<Step, Result>(
  plan: Generator<Step, Result, unknown>,
  answer: (step: Step) => unknown,
): Result {
  let next = plan.next();
  while (!next.done) next = plan.next(answer(next.value));
  return next.value;
}

/** Runs a generator of steps with an asynchronous adapter (Postgres). */
export async function runStepsAsync<Step, Result>(
  plan: Generator<Step, Result, unknown>,
  answer: (step: Step) => Promise<unknown>,
): Promise<Result> {
  let next = plan.next();
  while (!next.done) next = plan.next(await answer(next.value));
  return next.value;
}

/** Of each pipeline's queued groups, the one that is full (else the first by name): what it waits for. */
export function firstFullGroups(rows: readonly QueuedGroup[]): QueuedGroup[] {
  const byPipeline = new Map<string, QueuedGroup>();
  for (const row of [...rows].sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0))) {
    const seen = byPipeline.get(row.pipelineExecutionId);
    if (seen === undefined || (seen.active < seen.limit && Number(row.active) >= row.limit)) {
      byPipeline.set(row.pipelineExecutionId, { ...row, active: Number(row.active) });
    }
  }
  return [...byPipeline.values()];
}
