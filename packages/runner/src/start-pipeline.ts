import {
  assertContextSize,
  assertKnownKeys,
  assertStorableDate,
  Context,
  ContextError,
  checkConcurrencyKey,
  checkIdempotencyKey,
  checkPriority,
  concurrencyGroups,
  type ExecuteOptions,
  idempotencyConflictError,
  type JsonObject,
  type NewPipeline,
  newId,
  type PipelineGroup,
  type PipelineRow,
  truncateToMillis,
  UniversalUuid,
  ValidationError,
  type Workflow,
} from '@orreryjs/core';
import type { PipelineWriter } from './pipeline-writer.js';

/** What {@link startPipeline} needs from the runner. */
export interface StartPipelineDeps {
  /** Writes the pipeline (a {@link PipelineWriter} batching concurrent calls). */
  writer: PipelineWriter;
  now(): Date;
}

/** The checked input of a pipeline: what is written when it starts. */
export interface PipelineRequest {
  workflow: Workflow;
  input: JsonObject;
  idempotencyKey: string | null;
  scheduledTime: Date | null;
  scheduleId: string | null;
  runAt: Date | null;
  /** The options' priority, else the workflow's. */
  priority: number;
  /** The concurrency groups it joins (see concurrencyGroups). */
  concurrency: PipelineGroup[];
}

/**
 * Every key of ExecuteOptions (the `satisfies` keeps the list whole): any other key is a typo
 * or an option Orrery does not have, refused rather than ignored.
 */
const EXECUTE_OPTION_KEYS = Object.keys({
  idempotencyKey: true,
  timeoutMs: true,
  runAt: true,
  scheduledTime: true,
  scheduleId: true,
  priority: true,
  concurrencyKey: true,
} satisfies Record<keyof ExecuteOptions, true>);

/**
 * Checks that `options` is an object with only ExecuteOptions' keys (their values are checked
 * where they are used).
 * @throws ValidationError for a value that is not a plain object, or an unknown key, naming the nearest valid one.
 */
export function checkExecuteOptionKeys(options: unknown): asserts options is ExecuteOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    const kind = options === null ? 'null' : Array.isArray(options) ? 'an array' : `a ${typeof options}`;
    throw new ValidationError(
      `ExecuteOptions must be an object with some of ${EXECUTE_OPTION_KEYS.join(', ')}, got ${kind}.`,
    );
  }
  assertKnownKeys(options, EXECUTE_OPTION_KEYS, 'ExecuteOptions key', 'keys');
}

/**
 * Checks the context and options of a new pipeline. Runs before any write, so bad input is
 * refused whole.
 * @throws ContextError when the context is not plain JSON or is larger than `maxContextBytes`.
 * @throws ValidationError for options that are not an object or have an unknown key, an
 *   empty idempotency key, one with a NUL character or longer than MAX_IDEMPOTENCY_KEY_BYTES
 *   (1024 bytes in UTF-8), an invalid scheduled time, a priority outside -1000..1000 or a bad
 *   concurrencyKey.
 */
export function checkPipelineRequest(
  workflow: Workflow,
  context: Context | Record<string, unknown> | undefined,
  options: ExecuteOptions,
  maxContextBytes: number,
): PipelineRequest {
  checkExecuteOptionKeys(options);
  const input = readInput(context);
  assertContextSize(input, maxContextBytes, `The input context of workflow "${workflow.name}"`);
  const { scheduledTime, scheduleId, runAt } = options;
  const idempotencyKey = checkIdempotencyKey(options.idempotencyKey);
  if (scheduledTime !== undefined && !(scheduledTime instanceof Date && Number.isFinite(scheduledTime.getTime()))) {
    throw new ValidationError('scheduledTime must be a valid Date.');
  }
  if (scheduleId !== undefined && (typeof scheduleId !== 'string' || !UniversalUuid.isUuid(scheduleId))) {
    throw new ValidationError(`scheduleId must be a schedule's id (a UUID), got ${JSON.stringify(scheduleId)}.`);
  }
  if (runAt !== undefined) {
    if (!(runAt instanceof Date) || !Number.isFinite(runAt.getTime())) {
      throw new ValidationError(`runAt must be a valid Date, got ${String(runAt)}.`);
    }
    assertStorableDate(runAt, 'runAt');
  }
  return {
    workflow,
    input,
    idempotencyKey,
    scheduledTime: scheduledTime === undefined ? null : truncateToMillis(scheduledTime),
    scheduleId: scheduleId === undefined ? null : scheduleId.toLowerCase(),
    runAt: runAt === undefined ? null : truncateToMillis(runAt),
    priority:
      options.priority === undefined ? workflow.priority : checkPriority(options.priority, 'ExecuteOptions.priority'),
    concurrency: concurrencyGroups(
      workflow.name,
      workflow.concurrency,
      input,
      checkConcurrencyKey(options.concurrencyKey),
    ),
  };
}

/** A Context's data, or a record checked as plain JSON (a copy either way). */
function readInput(context: Context | Record<string, unknown> | undefined): JsonObject {
  if (context === undefined || context === null) return {};
  if (context instanceof Context) return context.toJSON();
  if (typeof context !== 'object' || Array.isArray(context)) {
    const kind = Array.isArray(context) ? 'an array' : `a ${typeof context}`;
    throw new ContextError(`A pipeline context must be a Context or a plain object of JSON values, got ${kind}.`);
  }
  return new Context(context as JsonObject).toJSON();
}

/**
 * The rows of a new pipeline: tasks without dependencies start `ready`. `traceContext` is that
 * of the span starting it (see tracing.ts): its attempts continue that trace, on any host.
 */
export function newPipelineRows(
  request: PipelineRequest,
  now: Date,
  traceContext: Record<string, string> | null,
): NewPipeline {
  const { workflow } = request;
  return {
    id: newId(),
    workflowName: workflow.name,
    workflowVersion: workflow.version,
    input: request.input,
    idempotencyKey: request.idempotencyKey,
    scheduledTime: request.scheduledTime,
    scheduleId: request.scheduleId,
    runAt: request.runAt,
    priority: request.priority,
    concurrency: request.concurrency,
    traceContext,
    now: truncateToMillis(now),
    tasks: workflow.tasks.map((task, position) => ({
      id: newId(),
      taskId: task.id,
      position,
      // Distinct dependencies: finishing a dependency counts down its dependents once, however often it is listed.
      pendingDeps: new Set(task.dependsOn).size,
      delayMs: task.delayMs ?? 0,
      waitSignal: task.waitFor?.signal ?? null,
    })),
  };
}

/**
 * Commits a pipeline and all its task rows in one transaction; tasks without dependencies
 * start `ready`. With an idempotency key already used, returns that execution and writes
 * nothing.
 * @throws IdempotencyConflictError when the key belongs to an execution of another workflow.
 */
export async function startPipeline(
  deps: StartPipelineDeps,
  request: PipelineRequest,
  traceContext: Record<string, string> | null,
): Promise<{ pipeline: PipelineRow; created: boolean }> {
  const { workflow } = request;
  const result = await deps.writer.create(newPipelineRows(request, deps.now(), traceContext));
  if (!result.created && result.pipeline.workflowName !== workflow.name) {
    throw idempotencyConflictError(request.idempotencyKey, result.pipeline, workflow.name);
  }
  return result;
}
