import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

/**
 * Installs the real OpenTelemetry SDK globally in this process, as an application would
 * (NodeSDK registers the same three parts): a tracer provider exporting every finished span to
 * the returned in-memory exporter, async-hooks context propagation and the W3C propagator.
 * `uninstall()` puts the no-op API back.
 */
export function installTracing(onEnd?: (span: ReadableSpan) => void) {
  const exporter = new InMemorySpanExporter();
  const spanProcessors = [new SimpleSpanProcessor({ exporter })];
  if (onEnd !== undefined) {
    spanProcessors.push(
      new SimpleSpanProcessor({
        exporter: {
          export: (spans, done) => {
            for (const span of spans) onEnd(span);
            done({ code: 0 });
          },
          shutdown: async () => {},
        },
      }),
    );
  }
  const provider = new TracerProvider({ spanProcessors });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    exporter,
    async uninstall(): Promise<void> {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/** What the tests compare of a finished span (also what the worker fixture prints, as JSON). */
export interface SpanSummary {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  attributes: Record<string, unknown>;
  status: { code: number; message?: string };
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
}

/** A finished span as plain JSON. */
export function summarize(span: ReadableSpan): SpanSummary {
  return {
    name: span.name,
    kind: span.kind,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId ?? null,
    attributes: { ...span.attributes },
    status: { ...span.status },
    events: span.events.map((event) => ({ name: event.name, attributes: { ...event.attributes } })),
  };
}
