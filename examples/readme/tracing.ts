// #region readme
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { ConsoleSpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { DefaultRunner } from '@orreryjs/runner';
// #endregion readme
import { nightly } from './helpers.js';

// #region readme

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator()); // what is stored with each pipeline
trace.setGlobalTracerProvider(
  new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: new ConsoleSpanExporter() })] }),
);

const runner = await DefaultRunner.create({ workflows: [nightly] });
await runner.start();
// The request's span is the parent of orrery.execute, which is the parent of every orrery.task.
await trace.getTracer('my-app').startActiveSpan('POST /reports', async (span) => {
  await runner.executeAsync('nightly-report');
  span.end();
});
// #endregion readme

// Not in the README: wait for the pipeline's tasks (and their spans), then stop.
const [started] = await runner.listExecutions({ workflowName: 'nightly-report' });
while ((await runner.getExecutionStatus(started!.executionId)) !== 'completed') {
  await new Promise((resolve) => setTimeout(resolve, 50));
}
await runner.shutdown();
