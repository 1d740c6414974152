import { trace } from '@opentelemetry/api';
import { OrreryClient } from '@orreryjs/runner';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ADAPTERS, type TestDatabase } from '../packages/runner/test/support.js';
import { spawnFixture, stopWorker, until, type Worker } from './support/processes.js';
import { installTracing, type SpanSummary } from './support/tracing.js';

const tracing = installTracing();
afterAll(() => tracing.uninstall());

/** The spans a worker fixture printed so far. */
function workerSpans(worker: Worker): SpanSummary[] {
  return worker.messages.filter((message) => 'span' in message).map((message) => message.span as SpanSummary);
}

describe.each(ADAPTERS)('a trace from a client process to a worker process on $name', ({ open }) => {
  const workers: Worker[] = [];
  let database: TestDatabase | undefined;

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => stopWorker(worker, 'SIGKILL')));
    await database?.remove();
  });

  it("continues the caller's trace in the task span on the worker: same trace id, child of orrery.execute", {
    timeout: 120_000,
  }, async () => {
    database = open();
    const worker = spawnFixture('tracing-worker.ts', ['tracing-worker'], {
      ORRERY_DATABASE: database.config.database!,
      ...(database.config.schema === undefined ? {} : { ORRERY_SCHEMA: database.config.schema }),
    });
    workers.push(worker);
    await worker.ready;

    const client = await OrreryClient.create(database.config);
    try {
      const { execution, callerTraceId } = await trace.getTracer('test').startActiveSpan('caller', async (span) => {
        try {
          return { execution: await client.executeAsync('remote'), callerTraceId: span.spanContext().traceId };
        } finally {
          span.end();
        }
      });
      expect((await execution.wait({ timeoutMs: 60_000 })).status).toBe('completed');
      const [task] = await until(
        'the worker to print the task span',
        async () => workerSpans(worker).filter((span) => span.name === 'orrery.task'),
        (found) => found.length > 0,
      );
      const execute = tracing.exporter
        .getFinishedSpans()
        .find((span) => span.name === 'orrery.execute' && span.attributes['orrery.execution_id'] === execution.id)!;
      expect(execute.spanContext().traceId).toBe(callerTraceId);
      expect(task).toMatchObject({
        traceId: callerTraceId,
        parentSpanId: execute.spanContext().spanId,
        attributes: {
          'orrery.workflow': 'remote',
          'orrery.execution_id': execution.id,
          'orrery.task_id': 'work',
          'orrery.attempt': 1,
          'orrery.runner_id': 'tracing-worker',
        },
      });
    } finally {
      await client.close();
    }
    const { code } = await stopWorker(worker);
    expect(code, worker.stderr()).toBe(0);
  });
});
