import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { installTracing, type SpanSummary, summarize } from '../../../test/support/tracing.js';
import { defineWorkflow, ManualClock } from '../src/index.js';
import { ADAPTERS, runnersPerTest, waitFor } from './support.js';

/** The SDK, installed for the blocks that trace (the first block runs without one). */
let tracing: ReturnType<typeof installTracing> | undefined;
afterAll(() => tracing?.uninstall());

/** `flaky` fails its first attempt and succeeds on the second. */
const traced = defineWorkflow({
  name: 'traced',
  tasks: [
    { id: 'fetch', run: (ctx) => void ctx.set('fetched', true) },
    {
      id: 'flaky',
      dependsOn: ['fetch'],
      retry: { maxAttempts: 2, initialDelayMs: 1, jitter: false },
      run: (_ctx, info) => {
        if (info.attempt === 1) throw new Error('the warehouse is down');
      },
    },
  ],
});

const report = defineWorkflow({
  name: 'report',
  tasks: [{ id: 'write', run: (ctx) => void ctx.set('written', true) }],
});

/** The finished spans so far, as plain objects. */
function spans(): SpanSummary[] {
  return tracing!.exporter.getFinishedSpans().map(summarize);
}

/** The finished spans named `name` whose attribute `key` is `value`. */
function spansNamed(name: string, key?: string, value?: unknown): SpanSummary[] {
  return spans().filter((span) => span.name === name && (key === undefined || span.attributes[key] === value));
}

/** Waits until `count` spans named `name` (and matching key = value) have ended; returns them. */
async function waitForSpans(count: number, name: string, key?: string, value?: unknown): Promise<SpanSummary[]> {
  await waitFor(() => spansNamed(name, key, value).length >= count);
  return spansNamed(name, key, value);
}

describe.each(ADAPTERS)('without an OpenTelemetry SDK on $name', (adapter) => {
  const perTest = runnersPerTest(adapter, () => ({ workflows: [report], pollIntervalMs: 20 }));

  it('stores no trace context with the pipeline and runs it as usual', async () => {
    const runner = await perTest.open();
    await runner.start();
    const execution = await trace.getTracer('test').startActiveSpan('caller', async (span) => {
      try {
        return await runner.executeAsync('report');
      } finally {
        span.end();
      }
    });
    expect((await execution.wait({ timeoutMs: 20_000 })).status).toBe('completed');
    const storage = await perTest.db.storage();
    try {
      expect((await storage.executions.getPipeline(execution.id))?.traceContext).toBeNull();
    } finally {
      await storage.close();
    }
  });
});

describe.each(ADAPTERS)('OpenTelemetry spans on $name', (adapter) => {
  // Once for the file: the runner's tracer keeps the first provider's tracer, as the API's proxy does.
  beforeAll(() => {
    tracing ??= installTracing();
  });
  const T0 = new Date('2030-01-07T00:00:00.000Z');
  let clock: ManualClock | undefined;
  const { open } = runnersPerTest(
    adapter,
    () => ({ workflows: [traced, report], pollIntervalMs: 20, cronPollIntervalMs: 20, ...(clock && { clock }) }),
    { shutdownTimeoutMs: 1_000 },
  );

  beforeEach(() => {
    tracing!.exporter.reset();
    clock = undefined;
  });

  /** A started runner with a schedule of `report`. */
  const startWithSchedule = async (name: string, cronExpression: string) => {
    const runner = await open();
    const schedule = await runner.addCronSchedule({ name, workflowName: 'report', cronExpression });
    await runner.start();
    return { runner, schedule };
  };

  it('continues the caller span: caller → orrery.execute → orrery.task per attempt, a failed attempt recorded', async () => {
    const runner = await open();
    await runner.start();
    const tracer = trace.getTracer('test');
    const execution = await tracer.startActiveSpan('caller', async (span) => {
      try {
        return await runner.executeAsync('traced', { n: 1 });
      } finally {
        span.end();
      }
    });
    expect((await execution.wait({ timeoutMs: 20_000 })).status).toBe('completed');
    const tasks = await waitForSpans(3, 'orrery.task', 'orrery.execution_id', execution.id);

    const [caller] = spansNamed('caller');
    const [execute] = spansNamed('orrery.execute');
    expect(execute).toMatchObject({
      kind: SpanKind.PRODUCER,
      traceId: caller!.traceId,
      parentSpanId: caller!.spanId,
      attributes: { 'orrery.workflow': 'traced', 'orrery.execution_id': execution.id },
    });
    const byAttempt = (taskId: string, attempt: number) =>
      tasks.find((s) => s.attributes['orrery.task_id'] === taskId && s.attributes['orrery.attempt'] === attempt);
    for (const span of tasks) {
      expect(span).toMatchObject({
        kind: SpanKind.CONSUMER,
        traceId: caller!.traceId,
        parentSpanId: execute!.spanId,
        attributes: {
          'orrery.workflow': 'traced',
          'orrery.execution_id': execution.id,
          'orrery.runner_id': runner.runnerId,
        },
      });
    }
    expect(byAttempt('fetch', 1)).toMatchObject({
      status: { code: SpanStatusCode.UNSET },
      attributes: { 'orrery.outcome': 'completed' },
      events: [],
    });
    expect(byAttempt('flaky', 1)).toMatchObject({
      status: { code: SpanStatusCode.ERROR, message: 'the warehouse is down' },
      attributes: { 'orrery.outcome': 'retry' },
      events: [{ name: 'exception', attributes: { 'exception.message': 'the warehouse is down' } }],
    });
    expect(byAttempt('flaky', 2)).toMatchObject({
      status: { code: SpanStatusCode.UNSET },
      attributes: { 'orrery.outcome': 'completed' },
    });
  });

  it('starts the trace at executeAsync when the caller has no span, and its tasks continue it', async () => {
    const runner = await open();
    const execution = await runner.executeAsync('report');
    const [execute] = await waitForSpans(1, 'orrery.execute', 'orrery.execution_id', execution.id);
    expect(execute!.parentSpanId).toBeNull();
    await runner.start();
    await execution.wait({ timeoutMs: 20_000 });
    const [task] = await waitForSpans(1, 'orrery.task', 'orrery.execution_id', execution.id);
    // executeAsync's own span is the parent: the trace starts where the pipeline was asked for.
    expect(task).toMatchObject({ traceId: execute!.traceId, parentSpanId: execute!.spanId });
  });

  it('traces one executeAsyncMany call as one orrery.execute span that every pipeline continues', async () => {
    const runner = await open();
    await runner.start();
    const executions = await runner.executeAsyncMany([{ workflowName: 'report' }, { workflowName: 'report' }]);
    await Promise.all(executions.map((execution) => execution.wait({ timeoutMs: 20_000 })));
    const [execute] = await waitForSpans(1, 'orrery.execute');
    expect(execute!.attributes['orrery.workflow']).toBe('report');
    for (const execution of executions) {
      const [task] = await waitForSpans(1, 'orrery.task', 'orrery.execution_id', execution.id);
      expect(task).toMatchObject({ traceId: execute!.traceId, parentSpanId: execute!.spanId });
    }
  });

  it('traces a scheduled occurrence as an orrery.cron.handoff span with its schedule and slot, parent of its task', async () => {
    clock = new ManualClock(T0);
    const { runner, schedule } = await startWithSchedule('each-second', '* * * * * *');
    clock.set(new Date(T0.getTime() + 1_000));
    const [handoff] = await waitForSpans(1, 'orrery.cron.handoff', 'orrery.schedule', schedule.id);
    expect(handoff).toMatchObject({
      kind: SpanKind.PRODUCER,
      parentSpanId: null,
      attributes: {
        'orrery.workflow': 'report',
        'orrery.schedule': schedule.id,
        'orrery.scheduled_time': '2030-01-07T00:00:01.000Z',
        'orrery.runner_id': runner.runnerId,
        'orrery.execution_id': expect.any(String),
      },
    });
    const executionId = handoff!.attributes['orrery.execution_id'];
    const [task] = await waitForSpans(1, 'orrery.task', 'orrery.execution_id', executionId);
    expect(task).toMatchObject({
      traceId: handoff!.traceId,
      parentSpanId: handoff!.spanId,
      attributes: { 'orrery.schedule': schedule.id, 'orrery.scheduled_time': '2030-01-07T00:00:01.000Z' },
    });
  });

  it('traces a manual trigger as orrery.execute → orrery.cron.handoff → orrery.task', async () => {
    const { runner, schedule } = await startWithSchedule('nightly', '0 0 * * *');
    const execution = await runner.triggerCronSchedule('nightly');
    await execution.wait({ timeoutMs: 20_000 });
    const [task] = await waitForSpans(1, 'orrery.task', 'orrery.execution_id', execution.id);
    const [execute] = spansNamed('orrery.execute', 'orrery.schedule', 'nightly');
    const [handoff] = spansNamed('orrery.cron.handoff', 'orrery.execution_id', execution.id);
    expect(execute).toMatchObject({ parentSpanId: null, attributes: { 'orrery.execution_id': execution.id } });
    expect(handoff).toMatchObject({
      traceId: execute!.traceId,
      parentSpanId: execute!.spanId,
      attributes: { 'orrery.schedule': schedule.id, 'orrery.scheduled_time': expect.any(String) },
    });
    expect(task).toMatchObject({ traceId: execute!.traceId, parentSpanId: handoff!.spanId });
  });

  it('traces a backfill as one orrery.execute span whose children hand off each slot', async () => {
    clock = new ManualClock(T0);
    const { runner, schedule } = await startWithSchedule('hourly', '0 * * * *');
    const slots = [3, 2, 1].map((hours) => new Date(T0.getTime() - hours * 3_600_000).toISOString());
    expect(await runner.backfillCronSchedule('hourly', { start: new Date(slots[0]!), end: T0 })).toEqual({
      created: 3,
      existing: 0,
    });
    const [execute] = spansNamed('orrery.execute', 'orrery.schedule', 'hourly');
    expect(execute).toMatchObject({ kind: SpanKind.PRODUCER, parentSpanId: null });
    const handoffs = spansNamed('orrery.cron.handoff', 'orrery.schedule', schedule.id);
    expect(handoffs.map((span) => span.attributes['orrery.scheduled_time']).sort()).toEqual(slots);
    for (const handoff of handoffs) {
      expect(handoff).toMatchObject({ traceId: execute!.traceId, parentSpanId: execute!.spanId });
      const [task] = await waitForSpans(
        1,
        'orrery.task',
        'orrery.execution_id',
        handoff.attributes['orrery.execution_id'],
      );
      expect(task).toMatchObject({ traceId: execute!.traceId, parentSpanId: handoff.spanId });
    }
  });
});
