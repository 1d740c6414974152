import { readFileSync } from 'node:fs';
import {
  type Attributes,
  type Context as OtelContext,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { PipelineRow, TaskOutcome } from '@orreryjs/core';

/*
 * OpenTelemetry spans (DESIGN.md "Observability"): `orrery.execute` and `orrery.cron.handoff`
 * where a pipeline starts, `orrery.task` around each attempt. Only `@opentelemetry/api` is
 * used, so every call is a no-op until the application installs an SDK. The W3C trace context
 * of the span that starts a pipeline is stored with it (propagation.inject, so the
 * application's propagator decides the format; NodeSDK's default is W3C trace context), and
 * each attempt's span is a child of that context: the trace id is the caller's, on any host.
 */

// ../package.json from both src/ and dist/.
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** The runner's tracer: a proxy that follows whatever provider the application registers, even later. */
const tracer = trace.getTracer('@orreryjs/runner', version);

/** The span attributes Orrery sets. */
export const SPAN_ATTRIBUTES = {
  workflow: 'orrery.workflow',
  executionId: 'orrery.execution_id',
  taskId: 'orrery.task_id',
  attempt: 'orrery.attempt',
  schedule: 'orrery.schedule',
  scheduledTime: 'orrery.scheduled_time',
  runnerId: 'orrery.runner_id',
  /** How an attempt ended: a TaskOutcome status, or why it was aborted. Not in DESIGN's list: added so a span says it. */
  outcome: 'orrery.outcome',
} as const;

/** The names of the spans that start pipelines. */
export type ProducerSpanName = 'orrery.execute' | 'orrery.cron.handoff';

/**
 * Runs `fn` in an active producer span, which records a thrown error (exception event, status
 * ERROR) and ends when `fn` settles. Pipelines created inside store its trace context.
 */
export function inProducerSpan<T>(
  name: ProducerSpanName,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(name, { kind: SpanKind.PRODUCER, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      recordError(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Starts an `orrery.cron.handoff` span without making it active (the in-transaction handoff is synchronous). */
export function startHandoffSpan(attributes: Attributes): Span {
  return tracer.startSpan('orrery.cron.handoff', { kind: SpanKind.PRODUCER, attributes }, ROOT_CONTEXT);
}

/**
 * The trace context of `span`, as the registered propagator writes it (`traceparent`,
 * `tracestate`), to store with a new pipeline. Taken from the span itself, not the active
 * context, so it works without a context manager. Null for a span that is not part of a
 * trace (no SDK): then nothing is injected, which keeps the no-SDK path cheap.
 */
export function traceContextOf(span: Span): Record<string, string> | null {
  if (!trace.isSpanContextValid(span.spanContext())) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier);
  return Object.keys(carrier).length === 0 ? null : carrier;
}

/** The schedule attributes of a pipeline started by a cron occurrence (none for others). */
export function scheduleAttributes(scheduleId: string | null | undefined, scheduledTime: Date | null | undefined) {
  const attributes: Attributes = {};
  if (scheduleId != null) attributes[SPAN_ATTRIBUTES.schedule] = scheduleId;
  if (scheduledTime != null) attributes[SPAN_ATTRIBUTES.scheduledTime] = scheduledTime.toISOString();
  return attributes;
}

/** An attempt's span and the context its task code runs in (the span active). */
export interface TaskSpan {
  span: Span;
  context: OtelContext;
}

/**
 * Starts the `orrery.task` span of an attempt (consumer), as a child of the trace context
 * stored with its pipeline, so it continues the caller's trace; a pipeline without one gets
 * a new trace per attempt (never the claim loop's context).
 */
export function startTaskSpan(
  pipeline: PipelineRow,
  attempt: { taskId: string; attempt: number },
  runnerId: string,
): TaskSpan {
  const parent =
    pipeline.traceContext === null ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, pipeline.traceContext);
  const span = tracer.startSpan(
    'orrery.task',
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        [SPAN_ATTRIBUTES.workflow]: pipeline.workflowName,
        [SPAN_ATTRIBUTES.executionId]: pipeline.id,
        [SPAN_ATTRIBUTES.taskId]: attempt.taskId,
        [SPAN_ATTRIBUTES.attempt]: attempt.attempt,
        [SPAN_ATTRIBUTES.runnerId]: runnerId,
        ...scheduleAttributes(pipeline.scheduleId, pipeline.scheduledTime),
      },
    },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

/** Marks an attempt's span with its outcome; a failure (retried or not) sets status ERROR. */
export function setOutcome(span: Span, outcome: TaskOutcome): void {
  span.setAttribute(SPAN_ATTRIBUTES.outcome, outcome.status);
  if (outcome.status === 'failed' || outcome.status === 'retry') {
    // The stored error may carry the stack after its first line; the exception event has the stack.
    span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error.split('\n', 1)[0]! });
  }
}

/** Records an error on a span: an exception event and status ERROR with its message. */
export function recordError(span: Span, error: unknown): void {
  const exception = error instanceof Error ? error : String(error);
  span.recordException(exception);
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}
