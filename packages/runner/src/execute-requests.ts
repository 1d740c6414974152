import {
  assertKnownKeys,
  type Context,
  type ExecuteOptions,
  IdempotencyConflictError,
  type Json,
  ValidationError,
  type Workflow,
} from '@orreryjs/core';
import { checkPipelineRequest, type PipelineRequest } from './start-pipeline.js';
import { checkTimeoutMs } from './validate.js';

/** One pipeline to start with {@link OrreryClient.executeAsyncMany}: the arguments of executeAsync. */
export interface ExecuteRequest {
  workflowName: string;
  context?: Context | Record<string, Json>;
  options?: ExecuteOptions;
}

/** Every key of an {@link ExecuteRequest}: any other is refused, naming the nearest. */
const EXECUTE_REQUEST_KEYS = Object.keys({
  workflowName: true,
  context: true,
  options: true,
} satisfies Record<keyof ExecuteRequest, true>);

/** A value as named in an error message. */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/** A request of {@link checkExecuteRequests}, checked: the pipeline to write and its wait's default timeout. */
export interface CheckedRequest {
  request: PipelineRequest;
  timeoutMs: number;
}

/**
 * Checks every request of an `executeAsyncMany` batch before anything is written, so that bad
 * input anywhere (an unknown workflow, a bad context or option, an unknown key, one idempotency
 * key given for two different workflows) refuses the whole batch.
 * @throws ValidationError, WorkflowNotFoundError, ContextError, IdempotencyConflictError naming the request.
 */
export async function checkExecuteRequests(
  requests: readonly ExecuteRequest[],
  resolve: (workflowName: string) => Promise<Workflow>,
  limits: { maxContextBytes: number; pipelineTimeoutMs: number },
): Promise<CheckedRequest[]> {
  if (!Array.isArray(requests)) {
    throw new ValidationError(
      `executeAsyncMany takes an array of { workflowName, context?, options? }, got ${describeValue(requests)}.`,
    );
  }
  const workflows = new Map<string, Promise<Workflow>>();
  const checked: CheckedRequest[] = [];
  const keyOwners = new Map<string, string>();
  for (const [index, entry] of requests.entries()) {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw new ValidationError(
        `executeAsyncMany: request ${index} must be an object { workflowName, context?, options? }, got ${describeValue(entry)}.`,
      );
    }
    assertKnownKeys(entry, EXECUTE_REQUEST_KEYS, `executeAsyncMany request ${index} key`, 'keys');
    const { workflowName, context, options = {} } = entry;
    const name = String(workflowName);
    let workflow = workflows.get(name);
    if (workflow === undefined || typeof workflowName !== 'string') {
      workflow = resolve(workflowName);
      workflows.set(name, workflow);
    }
    const request = checkPipelineRequest(await workflow, context, options, limits.maxContextBytes);
    const timeoutMs = checkTimeoutMs(options.timeoutMs, limits.pipelineTimeoutMs, 'timeoutMs');
    if (request.idempotencyKey !== null) {
      const owner = keyOwners.get(request.idempotencyKey);
      if (owner !== undefined && owner !== request.workflow.name) {
        throw new IdempotencyConflictError(
          `executeAsyncMany: idempotency key "${request.idempotencyKey}" is given for workflow "${owner}" and, in request ${index}, for "${request.workflow.name}"; use a key unique to each request.`,
        );
      }
      keyOwners.set(request.idempotencyKey, request.workflow.name);
    }
    checked.push({ request, timeoutMs });
  }
  return checked;
}
