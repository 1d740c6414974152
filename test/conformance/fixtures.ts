import {
  type ClaimedTask,
  type FinishTaskRequest,
  type FinishTaskResult,
  type JsonObject,
  leaseOfTask,
  type NewCronExecution,
  type NewPipeline,
  newId,
  occurrenceId,
  type PipelineRow,
  type RegisteredTasks,
  type ScheduleRow,
  type Storage,
  type TaskOutcome,
} from '@orreryjs/core';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';

/** An open storage and the function that closes it and disposes of its database. */
export interface OpenedStorage {
  storage: Storage;
  close: () => Promise<void>;
}

/** Opens a fresh, empty, migrated database. */
export type OpenStorage = () => Promise<OpenedStorage>;

/** What an adapter's test file tells the conformance suite about the adapter. */
export interface ConformanceOptions {
  /** Run the tests where two storages on one database claim at the same time. */
  concurrentClaims: boolean;
  /**
   * Opens a second storage on the database that the latest `open()` created (the suite
   * closes it). Required when `concurrentClaims` is true.
   */
  openSecond?: () => Promise<Storage>;
}

/** The instant every test's time is relative to: stores never read the clock, callers pass `now`. */
export const T0 = new Date('2026-01-01T00:00:00.000Z');

/** `T0` plus `ms` milliseconds. */
export function at(ms: number): Date {
  return new Date(T0.getTime() + ms);
}

/** A name no other test uses, so that tests sharing a database never see each other's rows. */
export function uniqueName(prefix = 'wf'): string {
  return `${prefix}_${newId().slice(0, 8)}`;
}

/**
 * Registers hooks that open a fresh database for every test (`each`) or once for the
 * enclosing describe block (`all`), and returns a getter for the open storage.
 */
export function useStorage(open: OpenStorage, lifetime: 'each' | 'all'): () => Storage {
  let opened: OpenedStorage | undefined;
  const setUp = async () => {
    opened = await open();
  };
  const tearDown = async () => {
    const current = opened;
    opened = undefined;
    await current?.close();
  };
  if (lifetime === 'all') {
    beforeAll(setUp);
    afterAll(tearDown);
  } else {
    beforeEach(setUp);
    afterEach(tearDown);
  }
  return () => {
    if (opened === undefined) throw new Error('The conformance storage is open only while a test runs.');
    return opened.storage;
  };
}

/** A workflow's task ids in canonical order, each with the ids it depends on. */
export type Dag = Readonly<Record<string, readonly string[]>>;

/** One task. */
export const SINGLE: Dag = { only: [] };
/** `a` then `b`. */
export const CHAIN: Dag = { a: [], b: ['a'] };
/** Fan-in: `a` and `b` both feed `c`. */
export const DIAMOND: Dag = { a: [], b: [], c: ['a', 'b'] };

/** The lease every fixture claim takes unless told otherwise. */
export const LEASE_MS = 1000;

/** The ids of the tasks that depend directly on `taskId`. */
export function dependentsOf(dag: Dag, taskId: string): string[] {
  return Object.entries(dag)
    .filter(([, dependencies]) => dependencies.includes(taskId))
    .map(([id]) => id);
}

/** A {@link NewPipeline} for `dag`, created at `T0` unless `overrides.now` says otherwise. */
export function newPipeline(
  workflowName: string,
  dag: Dag,
  overrides: Partial<Omit<NewPipeline, 'workflowName' | 'tasks'>> = {},
): NewPipeline {
  return {
    id: newId(),
    workflowVersion: 'v1',
    input: {},
    idempotencyKey: null,
    scheduledTime: null,
    now: T0,
    ...overrides,
    workflowName,
    tasks: Object.entries(dag).map(([taskId, dependencies], position) => ({
      id: newId(),
      taskId,
      position,
      pendingDeps: dependencies.length,
    })),
  };
}

/** A successful outcome that set `set`. */
export function completed(set: JsonObject = {}): TaskOutcome {
  return { status: 'completed', output: { set, deleted: [] } };
}

/** A workflow with its own name, bound to a storage: the moves of a runner, one call each. */
export interface WorkflowFixture {
  readonly name: string;
  readonly dag: Dag;
  readonly registered: RegisteredTasks[];
  /** Creates a pipeline of this workflow. */
  create(overrides?: Partial<Omit<NewPipeline, 'workflowName' | 'tasks'>>): Promise<PipelineRow>;
  /** Claims this workflow's tasks (all its task ids registered). */
  claim(
    runnerId: string,
    now: Date,
    options?: { limit?: number; leaseMs?: number; startNow?: number },
  ): Promise<ClaimedTask[]>;
  /** The finish request for a claimed task, fenced by its lease unless `fence` says otherwise. */
  request(
    claimed: ClaimedTask,
    outcome: TaskOutcome,
    now: Date,
    fence?: { runnerId?: string; attempt?: number },
  ): FinishTaskRequest;
  /** Commits {@link request}'s outcome for a claimed task. */
  finish(
    claimed: ClaimedTask,
    outcome: TaskOutcome,
    now: Date,
    fence?: { runnerId?: string; attempt?: number },
  ): Promise<FinishTaskResult>;
  /** Claims and finishes every task with `outcome` until nothing is claimable; returns the finished pipelines. */
  runAll(now: Date, outcome?: TaskOutcome): Promise<PipelineRow[]>;
}

/** A {@link WorkflowFixture} with a fresh name on the storage `storage()` returns. */
export function workflowFixture(storage: () => Storage, dag: Dag): WorkflowFixture {
  const name = uniqueName();
  const registered = [{ workflowName: name, taskIds: Object.keys(dag) }];
  const fixture: WorkflowFixture = {
    name,
    dag,
    registered,
    create: async (overrides = {}) =>
      (await storage().executions.createPipeline(newPipeline(name, dag, overrides))).pipeline,
    claim: (runnerId, now, options = {}) =>
      storage().executions.claimTasks({
        runnerId,
        registered,
        limit: options.limit ?? 100,
        leaseMs: options.leaseMs ?? LEASE_MS,
        now,
        ...(options.startNow === undefined ? {} : { startNow: options.startNow }),
      }),
    request: (claimed, outcome, now, fence = {}) => ({
      runnerId: fence.runnerId ?? claimed.task.leaseOwner!,
      ...leaseOfTask(claimed.task),
      attempt: fence.attempt ?? claimed.task.attempt,
      outcome,
      dependents: dependentsOf(dag, claimed.task.taskId),
      now,
    }),
    finish: async (claimed, outcome, now, fence) =>
      (await storage().executions.finishTasks([fixture.request(claimed, outcome, now, fence)])).finished[0]!,
    runAll: async (now, outcome = completed()) => {
      const finished: PipelineRow[] = [];
      for (
        let batch = await fixture.claim('runner', now);
        batch.length > 0;
        batch = await fixture.claim('runner', now)
      ) {
        for (const claimed of batch) {
          const result = await fixture.finish(claimed, outcome, now);
          if (result.finishedPipeline !== null) finished.push(result.finishedPipeline);
        }
      }
      return finished;
    },
  };
  return fixture;
}

/** A schedule of workflow `wf`, due at `T0`, version 1; `overrides` win. */
export function scheduleRow(overrides: Partial<ScheduleRow> = {}): ScheduleRow {
  return {
    id: newId(),
    name: null,
    workflowName: 'wf',
    cronExpression: '* * * * *',
    timezone: 'UTC',
    enabled: true,
    context: {},
    catchupPolicy: 'run_once',
    overlapPolicy: 'allow',
    jitterMs: 0,
    pauseOnFailure: false,
    enabledAt: T0,
    maxRuns: null,
    runCount: 0,
    dst: null,
    note: null,
    startAt: null,
    endAt: null,
    nextRunAt: T0,
    lastRunAt: null,
    version: 1,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  };
}

/** A `claimed` ledger row of `schedule` at `scheduledTime`, with its derived id; `overrides` win. */
export function occurrence(
  schedule: Pick<ScheduleRow, 'id' | 'workflowName' | 'context'>,
  scheduledTime: Date,
  overrides: Partial<NewCronExecution> = {},
): NewCronExecution {
  return {
    id: occurrenceId(schedule.id, scheduledTime),
    scheduleId: schedule.id,
    workflowName: schedule.workflowName,
    context: schedule.context,
    scheduledTime,
    fireAt: scheduledTime,
    claimedAt: scheduledTime,
    claimedBy: 'r1',
    status: 'claimed',
    source: 'schedule',
    missedCount: 0,
    ...overrides,
  };
}

/** The row a store holds right after inserting `row`: recovery fields empty. */
export function storedOccurrence(row: NewCronExecution) {
  return {
    ...row,
    pipelineExecutionId: null,
    handedOffAt: null,
    recoveryAttempts: 0,
    recovered: false,
    nextRecoveryAt: null,
    recoveryLeaseOwner: null,
    recoveryLeaseExpiresAt: null,
    abandonReason: null,
  };
}
