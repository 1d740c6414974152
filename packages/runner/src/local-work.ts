import type { PipelineStopCause } from './worker/active-tasks.js';

/**
 * The tasks a runner runs in this process, as its client's calls see them: the client tells
 * it what its calls changed. A client without a runner has no local work.
 */
export interface LocalWork {
  /** Tasks may be claimable now (a pipeline was created, resumed or retried here). */
  workReady(): void;
  /** A call here paused or cancelled a pipeline: stop its attempts running here. */
  stopPipeline(executionId: string, cause: PipelineStopCause): void;
  /**
   * First pause before a waiter reads a pipeline of `workflowName`, when this process will most
   * likely finish it itself and be told; undefined to let the client choose.
   */
  firstPollDelayMs(workflowName: string): number | undefined;
}

/** A client's local work when no runner holds it: nothing runs here. */
export const NO_LOCAL_WORK: LocalWork = {
  workReady: () => {},
  stopPipeline: () => {},
  firstPollDelayMs: () => undefined,
};
