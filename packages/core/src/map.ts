import type { ContextDelta } from './context.js';
import { ValidationError } from './errors.js';
import type { FinishTaskRequest, FinishTaskResult, TaskOutcome, TaskRow } from './execution-store.js';
import { type Json, toJson } from './json.js';

/*
 * Map tasks (DESIGN.md "Durable waits and fan-out"): the rules every adapter and the runner
 * share. A map task's items are stored once, as one task row per item — an *instance* — so each
 * is claimed, leased, retried and fenced like a task, and a crash never recomputes the list.
 *
 * - An instance row's task id is `<task id>[<index>]`: task ids cannot hold brackets, so the key
 *   never meets a task's, and every statement that reaches a task by (pipeline, task id) reaches
 *   the instance the same way. `map_of` names its task, `map_index` and `map_item` its item.
 * - While its instances run, the map task stays `running`, leased to {@link MAP_LEASE_OWNER} with
 *   no lease expiry (no runner holds it, and no lease sweep takes it over), and its `pendingDeps`
 *   counts the instances not yet completed: it waits on them as a task waits on dependencies.
 * - An instance's outcome settles its task in the outcome's transaction: the last instance to
 *   complete completes it (the results in item order), the first to fail for good fails it and
 *   cancels the others. The task's own outcome then goes through the ordinary finish, under the
 *   map lease, so its dependents and its pipeline move on as for any task.
 * - Instances are not tasks of the pipeline: they do not count in its remaining or failed tasks,
 *   and the claim's context and `listTasks` leave them out.
 */

/** The most items a map may return; more fail the task with ValidationError. */
export const MAX_MAP_ITEMS = 10_000;

/**
 * Who holds a map task's lease while its instances run. Not a runner id (runner ids are UUIDs or
 * names without a colon prefix of this kind), so no runner's renewal, release or shutdown reaches it.
 */
export const MAP_LEASE_OWNER = 'orrery:map';

/** The task id of a map task's instance `index`: `<task id>[<index>]`. */
export function mapInstanceTaskId(taskId: string, index: number): string {
  return `${taskId}[${index}]`;
}

/** Whether `taskId` names an instance of the map task `mapTaskId`. */
export function isInstanceOf(taskId: string, mapTaskId: string): boolean {
  return taskId.startsWith(`${mapTaskId}[`) && taskId.endsWith(']');
}

/**
 * The items `map` returned, checked: an array of at most {@link MAX_MAP_ITEMS} JSON values.
 * @throws ValidationError naming the task and what is wrong.
 */
export function checkMapItems(taskId: string, items: unknown): Json[] {
  if (!Array.isArray(items)) {
    throw new ValidationError(`map of task "${taskId}" must return an array of items, got ${typeof items}.`);
  }
  if (items.length > MAX_MAP_ITEMS) {
    throw new ValidationError(
      `map of task "${taskId}" returned ${items.length} items, over the limit of ${MAX_MAP_ITEMS}; split the work into batches.`,
    );
  }
  return items.map((item, index) => toJson(item as Json, `${taskId} item ${index}`));
}

/** An instance's completed outcome: its return value (`undefined` as null) under its own task id. */
export function instanceOutput(instanceTaskId: string, value: unknown): ContextDelta {
  return { set: { [instanceTaskId]: toJson((value ?? null) as Json, `${instanceTaskId} result`) }, deleted: [] };
}

/** A map task whose instances have all completed: its output sets its id to their results, in item order. */
export function mapTaskOutput(taskId: string, results: readonly Json[]): ContextDelta {
  return { set: { [taskId]: [...results] }, deleted: [] };
}

/** What an instance's accepted outcome does to its map task, as the settle step counts it. */
export interface MapTally {
  pipelineExecutionId: string;
  /** The map task's id. */
  taskId: string;
  /** Instances of the batch that completed. */
  completed: number;
  /** The first instance of the batch that failed for good, with its error; null for none. */
  failed: { index: number; error: string } | null;
  /** The map task's dependents, which the runner names. */
  dependents: readonly string[];
  /** The last request of the batch for this map task: where the task's own result is reported. */
  lastOrd: number;
  now: Date;
}

/**
 * The map tasks an accepted batch of outcomes moves, one tally each: instances that ended
 * (completed or failed for good; a retry leaves its task as it is).
 */
export function mapTallies(requests: readonly FinishTaskRequest[], finished: readonly FinishTaskResult[]): MapTally[] {
  const tallies = new Map<string, MapTally>();
  requests.forEach((request, ord) => {
    const instance = request.mapInstance;
    const { outcome } = request;
    if (instance === undefined || !finished[ord]?.accepted || outcome.status === 'retry') return;
    const key = `${request.pipelineExecutionId}\u001f${instance.taskId}`;
    let tally = tallies.get(key);
    if (tally === undefined) {
      tally = {
        pipelineExecutionId: request.pipelineExecutionId,
        taskId: instance.taskId,
        completed: 0,
        failed: null,
        dependents: request.dependents,
        lastOrd: ord,
        now: request.now,
      };
      tallies.set(key, tally);
    }
    tally.lastOrd = ord;
    if (outcome.status === 'completed') tally.completed += 1;
    else if (tally.failed === null) {
      tally.failed = { index: instance.index, error: outcome.status === 'failed' ? outcome.error : outcome.reason };
    }
  });
  return [...tallies.values()];
}

/** A map task parked under the map lease, as counting it down returns it. */
export interface ParkedMapTask {
  id: string;
  attempt: number;
  /** Its instances not yet completed. */
  pendingDeps: number;
}

/**
 * How a counted-down map task settles: `failed` (an instance failed for good: cancel the
 * others), `completed` (none remains: read the results), or null (instances remain).
 */
export function mapSettlement(tally: MapTally, parked: ParkedMapTask): 'failed' | 'completed' | null {
  if (tally.failed !== null) return 'failed';
  return parked.pendingDeps <= 0 ? 'completed' : null;
}

/** An instance's result, as its completed outcome stored it (see {@link instanceOutput}). */
export function instanceResult(row: TaskRow): Json {
  return row.output?.set[row.taskId] ?? null;
}

/**
 * The map task's own outcome, an ordinary finish under the map lease: failed with the first
 * failed instance's error, or completed with `results` (every instance's, in item order).
 */
export function mapTaskRequest(
  tally: MapTally,
  parked: ParkedMapTask,
  results: readonly Json[] | null,
): FinishTaskRequest {
  const outcome: TaskOutcome =
    tally.failed !== null
      ? // ran: false: the map task's own attempt (its map) succeeded; it has no history entry of its own.
        { status: 'failed', error: `item ${tally.failed.index} failed: ${tally.failed.error}`, ran: false }
      : { status: 'completed', output: mapTaskOutput(tally.taskId, results ?? []) };
  return {
    taskExecutionId: parked.id,
    pipelineExecutionId: tally.pipelineExecutionId,
    taskId: tally.taskId,
    attempt: parked.attempt,
    runnerId: MAP_LEASE_OWNER,
    dependents: tally.dependents,
    now: tally.now,
    outcome,
  };
}

/**
 * Folds each settled map task's own result into the result of the instance outcome that
 * settled it (`settling[i].ord`): what it readied and the pipeline it ended are that outcome's doing.
 */
export function withSettledMaps(
  finished: readonly FinishTaskResult[],
  settling: ReadonlyArray<{ ord: number }>,
  settled: readonly FinishTaskResult[],
): FinishTaskResult[] {
  const results = [...finished];
  settling.forEach(({ ord }, i) => {
    const instance = results[ord]!;
    const task = settled[i]!;
    results[ord] = {
      accepted: instance.accepted,
      readied: instance.readied + task.readied,
      finishedPipeline: task.finishedPipeline ?? instance.finishedPipeline,
      ...(task.slotsGivenOn === undefined ? {} : { slotsGivenOn: task.slotsGivenOn }),
    };
  });
  return results;
}
