import {
  assertKeysHeldBySameWorkflow,
  type ClaimedTask,
  type ClaimTasksRequest,
  type ConcurrencyGroupInfo,
  type CreatePipelinesOptions,
  claimsNothing,
  type DeferTaskRequest,
  type ExecutionStore,
  type FinishTaskRequest,
  type FinishTasksOptions,
  type FinishTasksResult,
  groupsEndedBy,
  type LeaseRef,
  type MapInstanceCounts,
  type NewPipeline,
  type Page,
  type PipelineFilter,
  type PipelineRow,
  type QueuedGroup,
  type RateLimitedStart,
  type RateLimitedStartResult,
  type RenewLeasesOptions,
  type RetriedTask,
  type SendSignalRequest,
  type SendSignalResult,
  type StartMapRequest,
  type TaskRow,
  uuidPrefixRange,
  type WaitForSignalRequest,
  type WaitForSignalResult,
  withSlotsGivenOn,
} from '@orreryjs/core';
import { readTransaction, type SqliteHandle, writeTransaction } from '../transaction.js';
import { admitQueuedIn, prepareAdmission, queueCreated, queuedGroupsOf, requeueRetried } from './admission.js';
import { prepareRateLimits, startRateLimitedIn } from './buckets.js';
import { claimTasks, prepareClaim } from './claim.js';
import { cancelPipeline, pausePipeline, prepareControl, retryPipeline } from './control.js';
import { finishTasks, prepareFinish } from './finish.js';
import { prepareLease, releaseLeases, renewLeases } from './lease.js';
import { countMapInstancesIn, prepareMaps, settleMapsIn, startMapIn } from './maps.js';
import { countWork, createPipelineIn, preparePipelines, selectPipelines } from './pipelines.js';
import { prepareRetention } from './retention.js';
import { prepareSignals, sendSignalIn, waitForSignalIn } from './signals.js';

/** Every prepared statement of the execution store, by the file of the guarantee it serves. */
export function prepareExecutionStore(handle: SqliteHandle) {
  return {
    pipelines: preparePipelines(handle),
    claim: prepareClaim(handle),
    lease: prepareLease(handle),
    finish: prepareFinish(handle),
    maps: prepareMaps(handle),
    control: prepareControl(handle),
    admission: prepareAdmission(handle),
    buckets: prepareRateLimits(handle),
    signals: prepareSignals(handle),
    retention: prepareRetention(handle),
  };
}

/** {@link ExecutionStore} on SQLite: each method is one synchronous `BEGIN IMMEDIATE` transaction. */
export class SqliteExecutionStore implements ExecutionStore {
  readonly #handle: SqliteHandle;
  readonly #q: ReturnType<typeof prepareExecutionStore>;

  /** Prepares every statement on `handle`; the schema must be migrated. */
  constructor(handle: SqliteHandle) {
    this.#handle = handle;
    this.#q = prepareExecutionStore(handle);
  }

  createPipeline(pipeline: NewPipeline): Promise<{ pipeline: PipelineRow; created: boolean }> {
    return writeTransaction(
      this.#handle,
      'createPipeline',
      () => queueCreated(this.#q, [pipeline], [createPipelineIn(this.#q.pipelines, pipeline)])[0]!,
    );
  }

  createPipelines(
    pipelines: readonly NewPipeline[],
    options: CreatePipelinesOptions = {},
  ): Promise<Array<{ pipeline: PipelineRow; created: boolean }>> {
    // Differs by necessity: no key lock order (inKeyLockOrder) as on Postgres: SQLite serialises
    // writers, so two batches cannot deadlock, and the rowid keeps listPipelines' request-order ties.
    return writeTransaction(this.#handle, 'createPipelines', () => {
      const inserted = pipelines.map((pipeline) => createPipelineIn(this.#q.pipelines, pipeline));
      const results = queueCreated(this.#q, pipelines, inserted);
      // Thrown inside the transaction, so that a conflict rolls the whole batch back.
      if (options.allOrNothing) assertKeysHeldBySameWorkflow(pipelines, results);
      return results;
    });
  }

  getPipeline(id: string): Promise<PipelineRow | null> {
    return readTransaction(this.#handle, 'getPipeline', () => this.#q.pipelines.selectPipeline.get({ id }) ?? null);
  }

  getPipelineByIdempotencyKey(key: string): Promise<PipelineRow | null> {
    return readTransaction(
      this.#handle,
      'getPipelineByIdempotencyKey',
      () => this.#q.pipelines.selectPipelineByKey.get({ key }) ?? null,
    );
  }

  async listPipelineIdsByPrefix(hexPrefix: string, limit: number): Promise<string[]> {
    const { first, last } = uuidPrefixRange(hexPrefix);
    const rows = await readTransaction(this.#handle, 'listPipelineIdsByPrefix', () =>
      this.#q.pipelines.selectPipelineIdsByPrefix.all({ first, last, limit }),
    );
    return rows.map((row) => row.id);
  }

  listPipelines(filter: PipelineFilter): Promise<PipelineRow[]> {
    return readTransaction(this.#handle, 'listPipelines', () =>
      selectPipelines(this.#handle.db, this.#handle.tables, filter).all(),
    );
  }

  listTasks(pipelineExecutionId: string): Promise<TaskRow[]> {
    return readTransaction(this.#handle, 'listTasks', () =>
      this.#q.pipelines.selectTasks.all({ pipelineId: pipelineExecutionId }),
    );
  }

  claimTasks(request: ClaimTasksRequest): Promise<ClaimedTask[]> {
    if (claimsNothing(request)) return Promise.resolve([]);
    return writeTransaction(this.#handle, 'claimTasks', () => claimTasks(this.#q.claim, request));
  }

  renewLeases(
    runnerId: string,
    leases: readonly LeaseRef[],
    leaseMs: number,
    now: Date,
    options?: RenewLeasesOptions,
  ): Promise<string[]> {
    if (leases.length === 0) return Promise.resolve([]);
    return writeTransaction(this.#handle, 'renewLeases', () =>
      renewLeases(this.#q.lease, runnerId, leases, leaseMs, now, options),
    );
  }

  releaseLeases(runnerId: string, leases: readonly LeaseRef[], now: Date): Promise<number> {
    if (leases.length === 0) return Promise.resolve(0);
    return writeTransaction(this.#handle, 'releaseLeases', () => releaseLeases(this.#q.lease, runnerId, leases, now));
  }

  finishTasks(outcomes: readonly FinishTaskRequest[], options: FinishTasksOptions = {}): Promise<FinishTasksResult> {
    const claim = options.claim === undefined || claimsNothing(options.claim) ? null : options.claim;
    if (outcomes.length === 0 && claim === null) return Promise.resolve({ finished: [], claimed: [] });
    // One BEGIN IMMEDIATE: the outcomes in order, the slots of the pipelines they ended given on,
    // then the claim, which sees what they readied and admitted.
    return writeTransaction(this.#handle, 'finishTasks', () => {
      // Instances of map tasks settle their tasks in the outcomes' transaction (see maps.ts).
      const finished = settleMapsIn(this.#q.maps, this.#q.finish, outcomes, finishTasks(this.#q.finish, outcomes));
      const groups = groupsEndedBy(finished);
      if (groups.length > 0) admitQueuedIn(this.#q.admission, groups, outcomes[0]!.now);
      return {
        finished: groups.length > 0 ? withSlotsGivenOn(finished) : finished,
        claimed: claim === null ? [] : claimTasks(this.#q.claim, claim),
      };
    });
  }

  startMap(request: StartMapRequest): Promise<boolean> {
    return writeTransaction(this.#handle, 'startMap', () => startMapIn(this.#q.maps, request));
  }

  listMapInstances(pipelineExecutionId: string, taskId: string, page: Page): Promise<TaskRow[]> {
    return readTransaction(this.#handle, 'listMapInstances', () =>
      this.#q.maps.selectMapInstancePage.all({ pipelineExecutionId, taskId, ...page }),
    );
  }

  countMapInstances(pipelineExecutionId: string): Promise<MapInstanceCounts[]> {
    return readTransaction(this.#handle, 'countMapInstances', () =>
      countMapInstancesIn(this.#q.maps, pipelineExecutionId),
    );
  }

  cancelPipeline(id: string, now: Date): Promise<PipelineRow | null> {
    return writeTransaction(this.#handle, 'cancelPipeline', () => cancelPipeline(this.#q, id, now));
  }

  pausePipeline(id: string, reason: string | null, now: Date): Promise<PipelineRow | null> {
    return writeTransaction(this.#handle, 'pausePipeline', () => pausePipeline(this.#q, id, reason, now));
  }

  resumePipeline(id: string, now: Date): Promise<PipelineRow | null> {
    return writeTransaction(
      this.#handle,
      'resumePipeline',
      () => this.#q.control.resumePipeline.get({ id, now }) ?? this.#q.pipelines.selectPipeline.get({ id }) ?? null,
    );
  }

  retryPipeline(id: string, tasks: readonly RetriedTask[], now: Date): Promise<PipelineRow | null> {
    return writeTransaction(this.#handle, 'retryPipeline', () => {
      const retried = retryPipeline(this.#q, id, tasks, now);
      if (retried !== null) requeueRetried(this.#q.admission, retried, now);
      return retried;
    });
  }

  admitQueued(groups: readonly string[] | null, now: Date): Promise<number> {
    if (groups !== null && groups.length === 0) return Promise.resolve(0);
    return writeTransaction(this.#handle, 'admitQueued', () => admitQueuedIn(this.#q.admission, groups, now).length);
  }

  deferTask(request: DeferTaskRequest): Promise<boolean> {
    return writeTransaction(
      this.#handle,
      'deferTask',
      () => this.#q.lease.deferTask.all({ ...request, waitsUntil: request.waitsUntil ?? null }).length > 0,
    );
  }

  sendSignal(request: SendSignalRequest): Promise<SendSignalResult> {
    return writeTransaction(this.#handle, 'sendSignal', () => sendSignalIn(this.#q.signals, request));
  }

  waitForSignal(request: WaitForSignalRequest): Promise<WaitForSignalResult> {
    return writeTransaction(this.#handle, 'waitForSignal', () => waitForSignalIn(this.#q, request));
  }

  startRateLimited(requests: readonly RateLimitedStart[]): Promise<RateLimitedStartResult[]> {
    if (requests.length === 0) return Promise.resolve([]);
    return writeTransaction(this.#handle, 'startRateLimited', () =>
      startRateLimitedIn(this.#q, requests, requests[0]!.now),
    );
  }

  listConcurrencyGroups(workflowName: string | null): Promise<ConcurrencyGroupInfo[]> {
    return readTransaction(this.#handle, 'listConcurrencyGroups', () =>
      this.#q.admission.selectGroupOccupancy.all({ workflowName }),
    );
  }

  listQueuedGroups(pipelineExecutionIds: readonly string[]): Promise<QueuedGroup[]> {
    return readTransaction(this.#handle, 'listQueuedGroups', () =>
      queuedGroupsOf(this.#q.admission, pipelineExecutionIds),
    );
  }

  countWork(now: Date): Promise<{ readyTasks: number; runningPipelines: number }> {
    return readTransaction(this.#handle, 'countWork', () => {
      const counts = countWork(this.#handle.db, this.#handle.tables, now).get();
      return { readyTasks: counts?.readyTasks ?? 0, runningPipelines: counts?.runningPipelines ?? 0 };
    });
  }

  countStalledTasks(now: Date): Promise<number> {
    return readTransaction(
      this.#handle,
      'countStalledTasks',
      () => this.#q.lease.countStalledTasks.get({ now })?.count ?? 0,
    );
  }

  deleteTerminalPipelines(before: Date, batchSize: number): Promise<number> {
    return writeTransaction(
      this.#handle,
      'deleteTerminalPipelines',
      () => this.#q.retention.deleteTerminalPipelines.run({ before, batchSize }).changes,
    );
  }

  deleteExpiredRateLimitStarts(before: Date, batchSize: number): Promise<number> {
    return writeTransaction(
      this.#handle,
      'deleteExpiredRateLimitStarts',
      () => this.#q.retention.deleteExpiredRateLimitStarts.run({ before, batchSize }).changes,
    );
  }
}
