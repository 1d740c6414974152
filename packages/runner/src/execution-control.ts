import {
  assertContextSize,
  assertNoNul,
  type Clock,
  hasNul,
  isTerminalPipelineStatus,
  type Json,
  MAX_SIGNAL_NAME_CHARS,
  type PipelineExecution,
  type PipelineRow,
  type Storage,
  toJson,
  ValidationError,
} from '@orreryjs/core';
import type { GroupAdmission } from './admission.js';
import type { CompletionWaiters } from './completion.js';
import type { EmitEvent } from './events.js';
import type { LocalWork } from './local-work.js';
import type { WorkflowRegistry } from './registry.js';
import { assertRetryable, planRetry, taskDependencies } from './retry-execution.js';
import { checkExecutionId, executionIdPrefix, executionNotFound, readPipeline } from './validate.js';

/** What the control calls need from the client that offers them. */
export interface ExecutionControlParts {
  storage: Storage;
  registry: WorkflowRegistry;
  clock: Clock;
  /** The runner's tasks in this process, stopped by a cancel or pause here and woken by a resume or retry. */
  localWork: LocalWork;
  waiters: CompletionWaiters;
  /** Gives a cancelled pipeline's concurrency slots on. */
  admission: GroupAdmission;
  emit: EmitEvent;
  /** @throws ConfigurationError after the client's `close()`. */
  assertOpen(): void;
  /** A handle on a pipeline whose `wait()` gives up after `defaultTimeoutMs` unless told otherwise. */
  handle(pipeline: PipelineRow, defaultTimeoutMs: number): PipelineExecution;
  pipelineTimeoutMs: number;
  /** The largest signal payload, in bytes of JSON (the context's bound: a payload becomes context). */
  maxContextBytes: number;
}

/**
 * The calls that control an execution already started: cancel, pause, resume and retry, and
 * finding one by a prefix of its id. The client offers them as its own (see
 * {@link CONTROL_CALLS}); they live apart so that each file holds one concern.
 */
export class ExecutionControl {
  readonly #parts: ExecutionControlParts;

  constructor(parts: ExecutionControlParts) {
    this.#parts = parts;
  }

  /**
   * Cancels an execution that is not terminal: its tasks that have not finished become
   * `cancelled`, and those running in this process have their signals aborted (a running
   * task on another runner is aborted when its lease renewal fails). A no-op on a terminal one.
   * @throws ExecutionNotFoundError for an unknown id.
   */
  async cancelExecution(executionId: string): Promise<void> {
    const before = await readPipeline(this.#parts.storage.executions, executionId);
    if (isTerminalPipelineStatus(before.status)) return;
    const row = await this.#parts.storage.executions.cancelPipeline(before.id, this.#parts.clock.now());
    if (row === null) throw executionNotFound(executionId);
    this.#cancelled(row);
  }

  /**
   * What follows a cancel committed by this process: its local tasks aborted, its concurrency
   * slots given on, waiters and listeners told.
   */
  #cancelled(row: PipelineRow): void {
    this.#parts.localWork.stopPipeline(row.id, 'cancelled');
    this.#parts.admission.freed(row);
    if (row.status === 'cancelled') {
      this.#parts.waiters.notify(row);
      this.#parts.emit('pipeline:cancelled', { executionId: row.id, workflowName: row.workflowName });
    }
  }

  /** The cron claim transaction cancelled these pipelines (`cancel_other`): as if cancelExecution had. */
  async cancelledByCron(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      const row = await this.#parts.storage.executions.getPipeline(id);
      if (row !== null) this.#cancelled(row);
    }
  }

  /**
   * Pauses a pending or running execution: nothing more is claimed, and its running tasks
   * go back to `ready` (their signals are aborted; not counted as failures). A no-op on a
   * paused or terminal one.
   * @throws ExecutionNotFoundError for an unknown id.
   * @throws ValidationError when `reason` is not a string, or holds a NUL character.
   */
  async pauseExecution(executionId: string, reason?: string): Promise<void> {
    if (reason !== undefined && typeof reason !== 'string') {
      throw new ValidationError(`A pause reason must be a string, got ${typeof reason}.`);
    }
    if (reason !== undefined) assertNoNul(reason, `The pause reason ${JSON.stringify(reason)}`);
    const id = checkExecutionId(executionId);
    const row = await this.#parts.storage.executions.pausePipeline(id, reason ?? null, this.#parts.clock.now());
    if (row === null) throw executionNotFound(executionId);
    if (row.status === 'paused') this.#parts.localWork.stopPipeline(row.id, 'paused');
  }

  /**
   * Resumes a paused execution; its ready tasks are claimed again. A no-op on one that is not paused.
   * @throws ExecutionNotFoundError for an unknown id.
   */
  async resumeExecution(executionId: string): Promise<void> {
    const id = checkExecutionId(executionId);
    const row = await this.#parts.storage.executions.resumePipeline(id, this.#parts.clock.now());
    if (row === null) throw executionNotFound(executionId);
    this.#parts.localWork.workReady();
  }

  /**
   * The whole id of the one execution whose id starts with `idOrPrefix`: a UUID, or at least
   * 8 of its leading hex digits (dashes where the UUID has them, or none), as the dashboard
   * and `orrery executions list` show ids shortened. For tools (the CLI) that take ids from
   * people.
   * @internal Not part of DESIGN.md's contract; may change.
   * @throws ExecutionNotFoundError when no execution's id starts so, or `idOrPrefix` is no
   * such prefix.
   * @throws ValidationError when several do, listing a few of them.
   */
  async resolveExecutionId(idOrPrefix: string): Promise<string> {
    this.#parts.assertOpen();
    const hexPrefix = typeof idOrPrefix === 'string' ? executionIdPrefix(idOrPrefix) : undefined;
    if (hexPrefix === undefined) throw executionNotFound(idOrPrefix);
    const shown = 5;
    const ids = await this.#parts.storage.executions.listPipelineIdsByPrefix(hexPrefix, shown + 1);
    if (ids.length === 0) throw executionNotFound(idOrPrefix);
    if (ids.length > 1) {
      const listed = ids.length > shown ? `${ids.slice(0, shown).join(', ')}, …` : ids.join(', ');
      throw new ValidationError(
        `Execution id prefix ${JSON.stringify(idOrPrefix)} matches ${ids.length > shown ? `more than ${shown}` : ids.length} executions (${listed}); give more of its characters.`,
      );
    }
    return ids[0]!;
  }

  /**
   * Sends the signal `name` to an execution, durably and once: a wait task of the execution
   * that waits for it (`waitFor: { signal: name }`) completes with `payload` (null when
   * none) under its task id, whether it is waiting already or becomes ready later. A second
   * signal of the same name is ignored: it returns and writes nothing.
   * @throws ValidationError for a name that is not 1 to 200 characters without NUL, a payload
   *   that is not JSON or is larger than maxContextBytes, or an execution that has ended.
   * @throws ExecutionNotFoundError for an unknown id.
   */
  async signal(executionId: string, name: string, payload?: Json): Promise<void> {
    this.#parts.assertOpen();
    const id = checkExecutionId(executionId);
    if (typeof name !== 'string' || name === '' || hasNul(name) || name.length > MAX_SIGNAL_NAME_CHARS) {
      throw new ValidationError(
        `A signal name must be 1 to ${MAX_SIGNAL_NAME_CHARS} characters without NUL, got ${JSON.stringify(name) ?? String(name)}.`,
      );
    }
    const value = payload === undefined ? null : toJson(payload, 'payload');
    assertContextSize({ payload: value }, this.#parts.maxContextBytes, `The payload of signal "${name}"`);
    const sent = await this.#parts.storage.executions.sendSignal({
      executionId: id,
      name,
      payload: value,
      now: this.#parts.clock.now(),
    });
    if (sent === 'unknown') throw executionNotFound(executionId);
    if (sent === 'terminal') {
      const row = await readPipeline(this.#parts.storage.executions, id);
      throw new ValidationError(
        `Execution ${id} has ended (${row.status}); a signal reaches only an execution that has not.`,
      );
    }
    if (sent === 'sent') this.#parts.localWork.workReady();
  }

  /**
   * Runs a `failed` or `cancelled` execution again from where it failed: its failed and
   * cancelled tasks, and those skipped downstream of them, go back to run with their attempt
   * counters kept; completed tasks keep their outputs. The execution keeps its id, so a cron
   * ledger row stays linked to it and a failed slot re-runs with its `scheduled_time`.
   * Emits `pipeline:retried`.
   * @throws ExecutionNotFoundError for an unknown id.
   * @throws ValidationError when the execution is in any other status.
   * @throws WorkflowNotFoundError when no runner stored the workflow version it ran.
   */
  async retryExecution(executionId: string): Promise<PipelineExecution> {
    this.#parts.assertOpen();
    const before = await readPipeline(this.#parts.storage.executions, executionId);
    assertRetryable(before);
    const dependsOn = await taskDependencies(before, this.#parts.registry, this.#parts.storage.workflows);
    const tasks = await this.#parts.storage.executions.listTasks(before.id);
    const plan = planRetry(tasks, (taskId) => dependsOn.get(taskId) ?? []);
    const row = await this.#parts.storage.executions.retryPipeline(before.id, plan.tasks, this.#parts.clock.now());
    if (row === null) throw executionNotFound(executionId);
    // Running again, or pending in its concurrency groups' queue; else another call retried it (or
    // cancelled the retry) in between: judge the status it has now.
    if (row.status !== 'running' && row.status !== 'pending') assertRetryable(row);
    this.#parts.emit('pipeline:retried', {
      executionId: row.id,
      workflowName: row.workflowName,
      previousStatus: before.status,
      retriedTasks: plan.taskIds,
    });
    this.#parts.localWork.workReady();
    return this.#parts.handle(row, this.#parts.pipelineTimeoutMs);
  }
}

/** Every call of {@link ExecutionControl} the client offers as its own. */
export const CONTROL_CALLS = [
  'cancelExecution',
  'pauseExecution',
  'resumeExecution',
  'resolveExecutionId',
  'retryExecution',
  'signal',
] as const satisfies ReadonlyArray<keyof ExecutionControl>;
