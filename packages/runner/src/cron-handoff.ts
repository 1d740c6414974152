import type { Span } from '@opentelemetry/api';
import type { CronExecutionRow, Logger, NewPipeline } from '@orreryjs/core';
import type { InTransactionHandoff } from '@orreryjs/cron';
import type { WorkflowRegistry } from './registry.js';
import { checkPipelineRequest, newPipelineRows } from './start-pipeline.js';
import { SPAN_ATTRIBUTES, scheduleAttributes, startHandoffSpan, traceContextOf } from './tracing.js';

/** What the runner's in-transaction cron handoff needs. */
export interface CronHandoffDeps {
  registry: WorkflowRegistry;
  maxContextBytes: number;
  logger: Logger;
  /** Set on the orrery.cron.handoff spans. */
  runnerId: string;
  /** After the claim commits: a pipeline this runner prepared now exists. */
  created(pipeline: { id: string; workflowName: string; idempotencyKey: string; scheduledTime: Date }): void;
  /** After the claim commits: it cancelled these pipelines (`cancel_other` replaced them). */
  cancelled(pipelineIds: readonly string[]): Promise<void>;
}

/**
 * The DefaultRunner's side of the in-transaction cron handoff: builds, inside the scheduler's
 * claim transaction, the same pipeline `executeAsync(workflow, ctx, { idempotencyKey:
 * occurrence.id })` would create, with the same checks. An occurrence it cannot prepare
 * (workflow unregistered meanwhile, context too large) stays `claimed`, and the two-phase
 * handoff reports the typed error as it would for any executor.
 */
export function cronHandoffOf(deps: CronHandoffDeps): InTransactionHandoff {
  /**
   * Pipeline ids prepared since the last commit, with their orrery.cron.handoff spans: a row
   * linked to another id found an existing pipeline. The spans end after the commit (a span whose
   * pipeline was not created, or whose transaction rolled back, ends at the next commit's report).
   */
  const prepared = new Map<string, Span>();
  return {
    preparePipeline(occurrence: CronExecutionRow, now: Date): NewPipeline | null {
      if (!deps.registry.has(occurrence.workflowName)) return null;
      const span = startHandoffSpan({
        [SPAN_ATTRIBUTES.workflow]: occurrence.workflowName,
        [SPAN_ATTRIBUTES.runnerId]: deps.runnerId,
        ...scheduleAttributes(occurrence.scheduleId, occurrence.scheduledTime),
      });
      try {
        const request = checkPipelineRequest(
          deps.registry.get(occurrence.workflowName),
          occurrence.context,
          { idempotencyKey: occurrence.id, scheduledTime: occurrence.scheduledTime, scheduleId: occurrence.scheduleId },
          deps.maxContextBytes,
        );
        // The pipeline stores the span's trace context, so its tasks are the span's children.
        const pipeline = newPipelineRows(request, now, traceContextOf(span));
        span.setAttribute(SPAN_ATTRIBUTES.executionId, pipeline.id);
        prepared.set(pipeline.id, span);
        return pipeline;
      } catch (error) {
        // The two-phase handoff takes it over, in a span of its own.
        span.end();
        deps.logger.debug({ err: error, occurrenceId: occurrence.id }, 'left to the two-phase cron handoff');
        return null;
      }
    },
    handedOff(occurrences: readonly CronExecutionRow[]): void {
      for (const occurrence of occurrences) {
        const id = occurrence.pipelineExecutionId;
        if (id === null || !prepared.has(id)) continue;
        deps.created({
          id,
          workflowName: occurrence.workflowName,
          idempotencyKey: occurrence.id,
          scheduledTime: occurrence.scheduledTime,
        });
      }
      for (const span of prepared.values()) span.end();
      prepared.clear();
    },
    cancelled: (pipelineIds) => deps.cancelled(pipelineIds),
  };
}
