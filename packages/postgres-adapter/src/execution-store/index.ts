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
  isQueued,
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
import { type PostgresDb, type PostgresHandle, statement, transaction } from '../transaction.js';
import { admitQueuedIn, queuedGroupsOf, requeueRetried, selectGroupOccupancy } from './admission.js';
import { startRateLimitedIn } from './buckets.js';
import { claimTasks, prepareClaim } from './claim.js';
import { cancelPipeline, pausePipeline, prepareControl, retryPipeline } from './control.js';
import { finishTasks, prepareFinish } from './finish.js';
import { deferTask, prepareLease, releaseLeases, renewLeases } from './lease.js';
import { countMapInstancesOf, selectMapInstancePage, settleMapsIn, startMapIn } from './maps.js';
import { countWork, createPipelinesIn, preparePipelines, selectPipelines } from './pipelines.js';
import { prepareRetention } from './retention.js';
import { prepareSignals, sendSignal, waitForSignalIn } from './signals.js';

/** Every prepared statement of the execution store, by the file of the guarantee it serves. */
export function prepareExecutionStore(handle: PostgresHandle) {
  return {
    pipelines: preparePipelines(handle),
    claim: prepareClaim(handle),
    lease: prepareLease(handle),
    finish: prepareFinish(handle),
    control: prepareControl(handle),
    retention: prepareRetention(handle),
    signals: prepareSignals(handle),
  };
}

/** {@link ExecutionStore} on Postgres: each method is one transaction, most of them one statement. */
export class PostgresExecutionStore implements ExecutionStore {
  readonly #handle: PostgresHandle;
  readonly #q: ReturnType<typeof prepareExecutionStore>;

  /** Builds every statement for `handle`; the schema must be migrated. */
  constructor(handle: PostgresHandle) {
    this.#handle = handle;
    this.#q = prepareExecutionStore(handle);
  }

  async createPipeline(pipeline: NewPipeline): Promise<{ pipeline: PipelineRow; created: boolean }> {
    const insert = (db: PostgresDb) =>
      createPipelinesIn(db, this.#handle.tables, this.#q.pipelines.insertPipelines, [pipeline]);
    // A pipeline of concurrency groups is queued and admitted in the insert's transaction.
    const [result] = isQueued(pipeline)
      ? await transaction(this.#handle, 'createPipeline', insert)
      : await statement('createPipeline', () => insert(this.#handle.db));
    return result!;
  }

  createPipelines(
    pipelines: readonly NewPipeline[],
    options: CreatePipelinesOptions = {},
  ): Promise<Array<{ pipeline: PipelineRow; created: boolean }>> {
    if (pipelines.length === 0) return Promise.resolve([]);
    const { tables } = this.#handle;
    if (!options.allOrNothing && !pipelines.some(isQueued)) {
      return statement('createPipelines', () =>
        createPipelinesIn(this.#handle.db, tables, this.#q.pipelines.insertPipelines, pipelines),
      );
    }
    // The insert and the read of the keys' holders in one transaction, so that a conflict rolls it back;
    // and the queueing of pipelines of concurrency groups with their insert.
    return transaction(this.#handle, 'createPipelines', async (tx) => {
      const results = await createPipelinesIn(tx, tables, this.#q.pipelines.insertPipelines, pipelines);
      if (options.allOrNothing) assertKeysHeldBySameWorkflow(pipelines, results);
      return results;
    });
  }

  getPipeline(id: string): Promise<PipelineRow | null> {
    return statement('getPipeline', async () => (await this.#q.pipelines.selectPipeline.execute({ id }))[0] ?? null);
  }

  getPipelineByIdempotencyKey(key: string): Promise<PipelineRow | null> {
    return statement(
      'getPipelineByIdempotencyKey',
      async () => (await this.#q.pipelines.selectPipelineByKey.execute({ key }))[0] ?? null,
    );
  }

  async listPipelineIdsByPrefix(hexPrefix: string, limit: number): Promise<string[]> {
    const { first, last } = uuidPrefixRange(hexPrefix);
    const rows = await statement('listPipelineIdsByPrefix', () =>
      this.#q.pipelines.selectPipelineIdsByPrefix.execute({ first, last, limit }),
    );
    return rows.map((row) => row.id);
  }

  listPipelines(filter: PipelineFilter): Promise<PipelineRow[]> {
    return statement('listPipelines', () => selectPipelines(this.#handle.db, this.#handle.tables, filter));
  }

  listTasks(pipelineExecutionId: string): Promise<TaskRow[]> {
    return statement('listTasks', () => this.#q.pipelines.selectTasks.execute({ pipelineId: pipelineExecutionId }));
  }

  claimTasks(request: ClaimTasksRequest): Promise<ClaimedTask[]> {
    if (claimsNothing(request)) return Promise.resolve([]);
    return statement('claimTasks', () => claimTasks(this.#q.claim, request));
  }

  renewLeases(
    runnerId: string,
    leases: readonly LeaseRef[],
    leaseMs: number,
    now: Date,
    options?: RenewLeasesOptions,
  ): Promise<string[]> {
    if (leases.length === 0) return Promise.resolve([]);
    return statement('renewLeases', () => renewLeases(this.#q.lease, runnerId, leases, leaseMs, now, options));
  }

  releaseLeases(runnerId: string, leases: readonly LeaseRef[], now: Date): Promise<number> {
    if (leases.length === 0) return Promise.resolve(0);
    return statement('releaseLeases', () => releaseLeases(this.#q.lease, runnerId, leases, now));
  }

  finishTasks(outcomes: readonly FinishTaskRequest[], options: FinishTasksOptions = {}): Promise<FinishTasksResult> {
    const claim = options.claim === undefined || claimsNothing(options.claim) ? null : options.claim;
    // One statement runs as a transaction of its own; the outcomes and a claim share one, whose
    // BEGIN and COMMIT cost two round trips and save a commit (a WAL flush). In it, the slots of
    // the pipelines the outcomes ended are given on before the claim, which then sees them; without
    // a claim the caller gives them on (slotsGivenOn false).
    // Instances of map tasks settle their tasks in the outcomes' transaction (see maps.ts).
    const settlesMaps = outcomes.some((outcome) => outcome.mapInstance !== undefined);
    if (outcomes.length === 0 || (claim === null && !settlesMaps)) {
      return statement('finishTasks', async () => ({
        finished: await finishTasks(this.#q.finish, outcomes),
        claimed: claim === null ? [] : await claimTasks(this.#q.claim, claim),
      }));
    }
    return transaction(this.#handle, 'finishTasks', async (tx) => {
      let finished = await finishTasks(this.#q.finish, outcomes, tx.$client);
      if (settlesMaps) finished = await settleMapsIn(tx, this.#handle.tables, this.#q.finish, outcomes, finished);
      const groups = groupsEndedBy(finished);
      if (groups.length > 0) await admitQueuedIn(tx, this.#handle.tables, groups, outcomes[0]!.now);
      return {
        finished: groups.length > 0 ? withSlotsGivenOn(finished) : finished,
        claimed: claim === null ? [] : await claimTasks(this.#q.claim, claim, tx.$client),
      };
    });
  }

  startMap(request: StartMapRequest): Promise<boolean> {
    return transaction(this.#handle, 'startMap', (tx) => startMapIn(tx, this.#handle.tables, request));
  }

  listMapInstances(pipelineExecutionId: string, taskId: string, page: Page): Promise<TaskRow[]> {
    return statement('listMapInstances', () =>
      selectMapInstancePage(this.#handle.db, this.#handle.tables, pipelineExecutionId, taskId, page),
    );
  }

  countMapInstances(pipelineExecutionId: string): Promise<MapInstanceCounts[]> {
    return statement('countMapInstances', () =>
      countMapInstancesOf(this.#handle.db, this.#handle.tables, pipelineExecutionId),
    );
  }

  cancelPipeline(id: string, now: Date): Promise<PipelineRow | null> {
    return transaction(this.#handle, 'cancelPipeline', (tx) => cancelPipeline(tx, this.#handle.tables, id, now));
  }

  pausePipeline(id: string, reason: string | null, now: Date): Promise<PipelineRow | null> {
    return transaction(this.#handle, 'pausePipeline', (tx) => pausePipeline(tx, this.#handle.tables, id, reason, now));
  }

  resumePipeline(id: string, now: Date): Promise<PipelineRow | null> {
    return statement('resumePipeline', async () => {
      const [resumed] = await this.#q.control.resumePipeline.execute({ id, now });
      return resumed ?? (await this.#q.pipelines.selectPipeline.execute({ id }))[0] ?? null;
    });
  }

  retryPipeline(id: string, tasks: readonly RetriedTask[], now: Date): Promise<PipelineRow | null> {
    return transaction(this.#handle, 'retryPipeline', async (tx) => {
      const retried = await retryPipeline(tx, this.#handle.tables, id, tasks, now);
      if (retried !== null) await requeueRetried(tx, this.#handle.tables, retried, now);
      return retried;
    });
  }

  async admitQueued(groups: readonly string[] | null, now: Date): Promise<number> {
    if (groups !== null && groups.length === 0) return 0;
    const admitted = await transaction(this.#handle, 'admitQueued', (tx) =>
      admitQueuedIn(tx, this.#handle.tables, groups, now),
    );
    return admitted.length;
  }

  async deferTask(request: DeferTaskRequest): Promise<boolean> {
    const rows = await statement('deferTask', () => deferTask(this.#handle.db, this.#handle.tables, request));
    return rows.length > 0;
  }

  sendSignal(request: SendSignalRequest): Promise<SendSignalResult> {
    return statement('sendSignal', () => sendSignal(this.#q.signals, this.#handle.pool, request));
  }

  waitForSignal(request: WaitForSignalRequest): Promise<WaitForSignalResult> {
    return transaction(this.#handle, 'waitForSignal', (tx) =>
      waitForSignalIn(this.#q.signals, tx, this.#handle.tables, request),
    );
  }

  startRateLimited(requests: readonly RateLimitedStart[]): Promise<RateLimitedStartResult[]> {
    if (requests.length === 0) return Promise.resolve([]);
    return transaction(this.#handle, 'startRateLimited', (tx) => startRateLimitedIn(tx, this.#handle.tables, requests));
  }

  listConcurrencyGroups(workflowName: string | null): Promise<ConcurrencyGroupInfo[]> {
    return statement('listConcurrencyGroups', () =>
      selectGroupOccupancy(this.#handle.db, this.#handle.tables, workflowName),
    );
  }

  listQueuedGroups(pipelineExecutionIds: readonly string[]): Promise<QueuedGroup[]> {
    return statement('listQueuedGroups', () =>
      queuedGroupsOf(this.#handle.db, this.#handle.tables, pipelineExecutionIds),
    );
  }

  countWork(now: Date): Promise<{ readyTasks: number; runningPipelines: number }> {
    return statement('countWork', async () => {
      const [counts] = await countWork(this.#handle.db, this.#handle.tables, now);
      return { readyTasks: counts?.readyTasks ?? 0, runningPipelines: counts?.runningPipelines ?? 0 };
    });
  }

  countStalledTasks(now: Date): Promise<number> {
    return statement(
      'countStalledTasks',
      async () => (await this.#q.lease.countStalledTasks.execute({ now }))[0]?.count ?? 0,
    );
  }

  deleteTerminalPipelines(before: Date, batchSize: number): Promise<number> {
    return statement(
      'deleteTerminalPipelines',
      async () => (await this.#q.retention.deleteTerminalPipelines.execute({ before, batchSize })).rowCount ?? 0,
    );
  }

  deleteExpiredRateLimitStarts(before: Date, batchSize: number): Promise<number> {
    return statement(
      'deleteExpiredRateLimitStarts',
      async () => (await this.#q.retention.deleteExpiredRateLimitStarts.execute({ before, batchSize })).rowCount ?? 0,
    );
  }
}
