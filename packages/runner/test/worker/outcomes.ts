import {
  type ClaimedTask,
  type ExecutionStore,
  type FinishTaskRequest,
  type FinishTasksOptions,
  type NewPipeline,
  newId,
} from '@orreryjs/core';

/** Test support for the worker's outcome commits: a diamond workflow, its outcomes, and a store that records its writes. */
export const T0 = new Date('2026-01-01T00:00:00.000Z');
export const WORKFLOW = 'finisher';
/** The diamond's tasks as a claim request names them. */
export const REGISTERED = [{ workflowName: WORKFLOW, taskIds: ['a', 'b', 'c'] }];

/** A pipeline of tasks a and b, and c depending on both. */
export function diamond(): NewPipeline {
  return {
    id: newId(),
    workflowName: WORKFLOW,
    workflowVersion: 'v1',
    input: {},
    idempotencyKey: null,
    scheduledTime: null,
    now: T0,
    tasks: [
      { id: newId(), taskId: 'a', position: 0, pendingDeps: 0 },
      { id: newId(), taskId: 'b', position: 1, pendingDeps: 0 },
      { id: newId(), taskId: 'c', position: 2, pendingDeps: 2 },
    ],
  };
}

/** The outcome `completed` of a claimed diamond task, fenced on its claim. */
export function completion(claimed: ClaimedTask, output: Record<string, number> = {}): FinishTaskRequest {
  return {
    runnerId: claimed.task.leaseOwner!,
    taskExecutionId: claimed.task.id,
    pipelineExecutionId: claimed.task.pipelineExecutionId,
    taskId: claimed.task.taskId,
    attempt: claimed.task.attempt,
    outcome: { status: 'completed', output: { set: output, deleted: [] } },
    dependents: claimed.task.taskId === 'c' ? [] : ['c'],
    now: T0,
  };
}

/** One finishTasks call as the store saw it. */
export interface RecordedWrite {
  outcomes: number;
  /** Whether a claim rode along. */
  withClaim: boolean;
}

/** The real store, with its finishTasks calls and its own claims recorded. */
export function recording(store: ExecutionStore): {
  store: ExecutionStore;
  writes: RecordedWrite[];
  batches(): number[];
  claims: number[];
  /** Claims of the loop's own that have returned (or failed). */
  claimsSettled(): number;
} {
  const writes: RecordedWrite[] = [];
  const claims: number[] = [];
  let settled = 0;
  const recorded = Object.create(store) as ExecutionStore;
  recorded.finishTasks = (requests, options: FinishTasksOptions = {}) => {
    writes.push({ outcomes: requests.length, withClaim: options.claim !== undefined });
    return store.finishTasks(requests, options);
  };
  recorded.claimTasks = (request) => {
    claims.push(request.limit);
    return store.claimTasks(request).finally(() => {
      settled += 1;
    });
  };
  return {
    store: recorded,
    writes,
    batches: () => writes.map((write) => write.outcomes),
    claims,
    claimsSettled: () => settled,
  };
}

/** Lets what was queued in this turn start (writes and claims wait for the end of the current turn). */
export const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
