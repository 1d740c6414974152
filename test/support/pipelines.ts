import { type NewPipeline, newId } from '@orreryjs/core';

/** The workflow and task of {@link oneTaskPipelines}, as a claim request names them. */
export const ONE_TASK_WORKFLOW = { workflowName: 'w', taskIds: ['t'] } as const;

/** `count` new pipelines of a one-task workflow (`w`, task `t`), for a store's `createPipelines`. */
export function oneTaskPipelines(count: number, now: Date): NewPipeline[] {
  return Array.from({ length: count }, () => ({
    id: newId(),
    workflowName: ONE_TASK_WORKFLOW.workflowName,
    workflowVersion: '1',
    input: {},
    idempotencyKey: null,
    scheduledTime: null,
    now,
    tasks: [{ id: newId(), taskId: ONE_TASK_WORKFLOW.taskIds[0], position: 0, pendingDeps: 0 }],
  }));
}
