import { newId, occurrenceId, type Storage } from '@orreryjs/core';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  type CronBufferedEvent,
  type CronFiredEvent,
  type CronPausedEvent,
  type CronRecoveredEvent,
  type CronSkippedEvent,
  type DefaultRunner,
  defineWorkflow,
  ManualClock,
  type PipelineRetriedEvent,
  ScheduleOverlapError,
  ValidationError,
} from '../src/index.js';
import { ADAPTERS, gate, runnersPerTest, waitFor } from './support.js';

const MINUTE = 60_000;
const T0 = new Date('2030-01-07T00:00:00.000Z');
const minutes = (n: number) => new Date(T0.getTime() + n * MINUTE);

/** Each `held` pipeline blocks until the test opens its gate (or it is cancelled); tracks how many run at once. */
const heldGates = new Map<string, ReturnType<typeof gate>>();
const heldAborted = new Set<string>();
let heldRunning = 0;
let heldMaxRunning = 0;
const held = defineWorkflow({
  name: 'held',
  tasks: [
    {
      id: 'hold',
      run: async (_ctx, info) => {
        const release = gate();
        heldGates.set(info.executionId, release);
        heldRunning += 1;
        heldMaxRunning = Math.max(heldMaxRunning, heldRunning);
        const aborted = new Promise<void>((resolve) =>
          info.signal.addEventListener('abort', () => resolve(), { once: true }),
        );
        try {
          await Promise.race([release.promise, aborted]);
          if (info.signal.aborted) heldAborted.add(info.executionId);
        } finally {
          heldRunning -= 1;
        }
      },
    },
  ],
});

/** `check` fails while `checkBroken` is set; runs of each task are counted by execution. */
let checkBroken = true;
const runs = new Map<string, string[]>();
const scheduledTimes = new Map<string, Date | undefined>();
const flaky = defineWorkflow({
  name: 'flaky',
  tasks: [
    {
      id: 'extract',
      run: (ctx, info) => {
        runs.set(info.executionId, [...(runs.get(info.executionId) ?? []), 'extract']);
        ctx.set('rows', 3);
      },
    },
    {
      id: 'check',
      dependsOn: ['extract'],
      retry: { maxAttempts: 1 },
      run: (_ctx, info) => {
        runs.set(info.executionId, [...(runs.get(info.executionId) ?? []), 'check']);
        scheduledTimes.set(info.executionId, info.scheduledTime);
        if (checkBroken) throw new Error('the warehouse is down');
      },
    },
    {
      id: 'publish',
      dependsOn: ['check'],
      run: (ctx, info) => {
        runs.set(info.executionId, [...(runs.get(info.executionId) ?? []), 'publish']);
        ctx.set('published', true);
      },
    },
  ],
});

const quick = defineWorkflow({ name: 'quick', tasks: [{ id: 'only', run: (ctx) => void ctx.set('done', true) }] });

describe.each(ADAPTERS)('operations on $name', (adapter) => {
  let clock: ManualClock;
  const perTest = runnersPerTest(
    adapter,
    () => ({
      workflows: [held, flaky, quick],
      clock,
      pollIntervalMs: 20,
      cronPollIntervalMs: 20,
      taskLeaseMs: 6 * 60 * MINUTE,
    }),
    {
      shutdownTimeoutMs: 1_000,
      beforeShutdown: () => {
        for (const release of heldGates.values()) release.open();
      },
    },
  );
  const { open } = perTest;
  const events = <E>(
    runner: DefaultRunner,
    name: 'cron:fired' | 'cron:buffered' | 'cron:paused' | 'cron:skipped' | 'cron:recovered',
  ) => {
    const seen: E[] = [];
    runner.on(name, (event) => seen.push(event as E));
    return seen;
  };

  /**
   * A started runner with a minutely schedule of the `held` workflow under `overlapPolicy`,
   * once its first occurrence (minute 1) has fired and its pipeline is held running.
   */
  const holdingSchedule = async (name: string, overlapPolicy: 'skip' | 'buffer_one' | 'cancel_other') => {
    const runner = await open();
    const fired = events<CronFiredEvent>(runner, 'cron:fired');
    const buffered = events<CronBufferedEvent>(runner, 'cron:buffered');
    const schedule = await runner.addCronSchedule({
      name,
      workflowName: 'held',
      cronExpression: '* * * * *',
      overlapPolicy,
    });
    await runner.start();
    clock.set(minutes(1));
    await waitFor(() => fired.length === 1 && heldGates.has(fired[0]!.pipelineExecutionId));
    return { runner, schedule, fired, buffered };
  };

  /** Waits until the runner's cron tick has run at the clock's current time. */
  const ticked = (runner: DefaultRunner) =>
    waitFor(async () => (await runner.health()).lastTickAt?.getTime() === clock.now().getTime());
  /** Waits until the runner's recovery pass has run at the clock's current time. */
  const recovered = (runner: DefaultRunner) =>
    waitFor(async () => (await runner.health()).lastRecoveryAt?.getTime() === clock.now().getTime());

  /** Runs `work` on a second connection to the runner's database: what another (dead) runner wrote. */
  const directly = async <T>(work: (storage: Storage) => Promise<T>): Promise<T> => {
    const storage = await perTest.db.storage();
    try {
      return await work(storage);
    } finally {
      await storage.close();
    }
  };

  beforeEach(() => {
    clock = new ManualClock(T0);
    heldRunning = 0;
    heldMaxRunning = 0;
    checkBroken = true;
  });

  it('buffer_one never runs two pipelines of a schedule at once and hands the newest slot off with its own time', async () => {
    const { runner, fired, buffered } = await holdingSchedule('one-at-a-time', 'buffer_one');
    clock.set(minutes(2));
    await waitFor(() => buffered.length === 1);
    clock.set(minutes(3));
    await waitFor(() => buffered.length === 2);
    expect(buffered.map((event) => event.scheduledTime)).toEqual([minutes(2), minutes(3)]);
    expect(fired).toHaveLength(1);

    heldGates.get(fired[0]!.pipelineExecutionId)!.open();
    await waitFor(() => fired.length === 2);
    expect(fired[1]).toMatchObject({ scheduledTime: minutes(3), source: 'schedule' });
    await waitFor(() => heldGates.has(fired[1]!.pipelineExecutionId));
    heldGates.get(fired[1]!.pipelineExecutionId)!.open();
    await waitFor(async () => (await runner.getExecutionStatus(fired[1]!.pipelineExecutionId)) === 'completed');
    expect(heldMaxRunning).toBe(1);
    const history = await runner.getCronExecutionHistory('one-at-a-time');
    expect(history.map((row) => [row.scheduledTime, row.status])).toEqual([
      [minutes(3), 'handed_off'],
      [minutes(2), 'skipped'],
      [minutes(1), 'handed_off'],
    ]);
    const result = await runner.getExecutionResult(fired[1]!.pipelineExecutionId);
    expect(result.finalContext.scheduled_time).toBe(minutes(3).toISOString());
  });

  it('cancel_other cancels the running pipeline and hands the new slot off at once', async () => {
    const { runner, fired } = await holdingSchedule('latest-wins', 'cancel_other');
    const first = fired[0]!.pipelineExecutionId;
    clock.set(minutes(2));
    await waitFor(() => fired.length === 2);
    expect(fired[1]).toMatchObject({ scheduledTime: minutes(2) });
    await waitFor(async () => (await runner.getExecutionStatus(first)) === 'cancelled');
    await waitFor(() => heldAborted.has(first));
    expect(await runner.getExecutionStatus(fired[1]!.pipelineExecutionId)).not.toBe('cancelled');
  });

  it('a manual trigger of a skip schedule while its pipeline runs raises ScheduleOverlapError naming it, recorded skipped', async () => {
    const { runner, fired } = await holdingSchedule('no-overlap', 'skip');
    const active = fired[0]!.pipelineExecutionId;
    const error = await runner.triggerCronSchedule('no-overlap').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ScheduleOverlapError);
    expect(error).toMatchObject({ code: 'SCHEDULE_OVERLAP', activePipelineExecutionId: active });
    expect((error as Error).message).toContain(active);
    const history = await runner.getCronExecutionHistory('no-overlap');
    expect(history.map((row) => [row.source, row.status])).toEqual([
      ['manual', 'skipped'],
      ['schedule', 'handed_off'],
    ]);
    expect(await runner.listExecutions({ workflowName: 'held' })).toHaveLength(1);
  });

  it('a manual trigger of a buffer_one schedule waits for the running pipeline, then runs: never two at once', async () => {
    const { runner, fired, buffered } = await holdingSchedule('queued-trigger', 'buffer_one');
    const execution = await runner.triggerCronSchedule('queued-trigger');
    expect(buffered).toHaveLength(1);
    const [manual] = await runner.getCronExecutionHistory('queued-trigger');
    expect(manual).toMatchObject({ id: execution.id, source: 'manual', status: 'buffered', pipelineExecutionId: null });
    expect(await execution.status()).toBe('pending');
    const waited = execution.wait();

    heldGates.get(fired[0]!.pipelineExecutionId)!.open();
    let pipelineId: string | null = null;
    await waitFor(async () => {
      pipelineId = (await runner.getCronExecutionHistory('queued-trigger'))[0]!.pipelineExecutionId;
      return pipelineId !== null && heldGates.has(pipelineId);
    });
    heldGates.get(pipelineId!)!.open();
    const result = await waited;
    expect(result).toMatchObject({ executionId: pipelineId, status: 'completed' });
    expect(heldMaxRunning).toBe(1);
    expect(await runner.listExecutions({ workflowName: 'held' })).toHaveLength(2);
  });

  it('a manual trigger of a cancel_other schedule cancels the running pipeline and runs instead', async () => {
    const { runner, fired } = await holdingSchedule('trigger-wins', 'cancel_other');
    const first = fired[0]!.pipelineExecutionId;
    const execution = await runner.triggerCronSchedule('trigger-wins');
    // Cancelled with the trigger's ledger row, before the new pipeline was even created.
    expect(await runner.getExecutionStatus(first)).toBe('cancelled');
    await waitFor(() => heldAborted.has(first) && heldGates.has(execution.id));
    heldGates.get(execution.id)!.open();
    expect(await execution.wait()).toMatchObject({ status: 'completed' });
    expect(heldMaxRunning).toBe(1);
  });

  it("a manual trigger with { overlapPolicy: 'allow' } starts at once whatever the schedule's policy", async () => {
    const { runner, fired } = await holdingSchedule('forced', 'buffer_one');
    const execution = await runner.triggerCronSchedule('forced', { overlapPolicy: 'allow' });
    await waitFor(() => heldGates.has(execution.id));
    expect(heldRunning).toBe(2);
    for (const id of [fired[0]!.pipelineExecutionId, execution.id]) heldGates.get(id)!.open();
    expect(await execution.wait()).toMatchObject({ status: 'completed' });
    const [manual] = await runner.getCronExecutionHistory('forced');
    expect(manual).toMatchObject({ source: 'manual', status: 'handed_off', pipelineExecutionId: execution.id });
  });

  it('refuses unknown trigger options or values with ValidationError and writes nothing', async () => {
    const runner = await open();
    await runner.addCronSchedule({ name: 'picky', workflowName: 'quick', cronExpression: '* * * * *' });
    for (const options of [{ overlapPolicy: 'skip' }, { force: true }, 'allow', null]) {
      const error = await runner.triggerCronSchedule('picky', options as never).catch((e: unknown) => e);
      expect(error, JSON.stringify(options)).toBeInstanceOf(ValidationError);
    }
    expect(await runner.getCronExecutionHistory('picky')).toEqual([]);
    expect(await runner.listExecutions({ workflowName: 'quick' })).toEqual([]);
  });

  it('pauseOnFailure disables the schedule after its first failed pipeline, with a note and cron:paused', async () => {
    const runner = await open();
    const fired = events<CronFiredEvent>(runner, 'cron:fired');
    const paused = events<CronPausedEvent>(runner, 'cron:paused');
    const schedule = await runner.addCronSchedule({
      name: 'careful',
      workflowName: 'flaky',
      cronExpression: '* * * * *',
      pauseOnFailure: true,
    });
    await runner.start();
    clock.set(minutes(1));
    await waitFor(() => paused.length === 1);
    const failed = fired[0]!.pipelineExecutionId;
    expect(await runner.getExecutionStatus(failed)).toBe('failed');
    const note = `paused after failure of execution ${failed}`;
    expect(paused[0]).toMatchObject({ scheduleId: schedule.id, reason: 'failure', pipelineExecutionId: failed, note });
    expect(await runner.getCronSchedule('careful')).toMatchObject({ enabled: false, nextRunAt: null, note });
    clock.set(minutes(3));
    await ticked(runner);
    expect(fired).toHaveLength(1);
    // Enabling clears the note.
    expect(await runner.setCronScheduleEnabled('careful', true)).toMatchObject({ enabled: true, note: null });
  });

  it('pauseOnFailure pauses at the next claim when the runner that ended a pipeline failed died before pausing', async () => {
    const runner = await open();
    const fired = events<CronFiredEvent>(runner, 'cron:fired');
    const paused = events<CronPausedEvent>(runner, 'cron:paused');
    const schedule = await runner.addCronSchedule({
      name: 'careful',
      workflowName: 'quick',
      cronExpression: '* * * * *',
      pauseOnFailure: true,
    });
    // A pipeline of the schedule fails under another runner, which dies before it can pause the schedule.
    const failedAt = new Date(T0.getTime() + 30_000);
    const failed = await directly(async (storage) => {
      const { pipeline } = await storage.executions.createPipeline({
        id: newId(),
        workflowName: 'quick',
        workflowVersion: 'v1',
        input: {},
        idempotencyKey: null,
        scheduledTime: T0,
        scheduleId: schedule.id,
        now: T0,
        tasks: [{ id: newId(), taskId: 'only', position: 0, pendingDeps: 0 }],
      });
      const registered = [{ workflowName: 'quick', taskIds: ['only'] }];
      const [claimed] = await storage.executions.claimTasks({
        runnerId: 'dead',
        registered,
        limit: 1,
        leaseMs: MINUTE,
        now: T0,
      });
      const { finishedPipeline } = (
        await storage.executions.finishTasks([
          {
            runnerId: 'dead',
            taskExecutionId: claimed!.task.id,
            pipelineExecutionId: pipeline.id,
            taskId: claimed!.task.taskId,
            attempt: claimed!.task.attempt,
            outcome: { status: 'failed', error: 'the warehouse is down' },
            dependents: [],
            now: failedAt,
          },
        ])
      ).finished[0]!;
      expect(finishedPipeline).toMatchObject({ status: 'failed' });
      return pipeline.id;
    });

    clock.set(minutes(1));
    await runner.start();
    await waitFor(() => paused.length === 1);
    const note = `paused after failure of execution ${failed}`;
    expect(paused[0]).toEqual({
      scheduleId: schedule.id,
      scheduleName: 'careful',
      note,
      reason: 'failure',
      pipelineExecutionId: failed,
    });
    expect(await runner.getCronSchedule('careful')).toMatchObject({ enabled: false, nextRunAt: null, note });
    expect(await runner.getCronExecutionHistory('careful')).toEqual([]);
    expect(fired).toEqual([]);

    // Resumed, it fires again: the failure it was paused for is older than the resume.
    await runner.setCronScheduleEnabled('careful', true);
    clock.set(minutes(2));
    await waitFor(() => fired.length === 1);
    expect(fired[0]).toMatchObject({ scheduledTime: minutes(2) });
    await waitFor(async () => (await runner.getExecutionStatus(fired[0]!.pipelineExecutionId)) === 'completed');
    clock.set(minutes(3));
    await waitFor(() => fired.length === 2);
    expect(paused).toHaveLength(1);
    expect(await runner.getCronSchedule('careful')).toMatchObject({ enabled: true, note: null });
  });

  it('cancel_other: a newer slot replaces an occurrence a dead runner had claimed, which then never starts', async () => {
    const runner = await open({ cronLostThresholdMs: 5 * MINUTE, cronRecoveryIntervalMs: 20 });
    const fired = events<CronFiredEvent>(runner, 'cron:fired');
    const skipped = events<CronSkippedEvent>(runner, 'cron:skipped');
    const recoveredEvents = events<CronRecoveredEvent>(runner, 'cron:recovered');
    const schedule = await runner.addCronSchedule({
      name: 'latest-wins',
      workflowName: 'quick',
      cronExpression: '* * * * *',
      overlapPolicy: 'cancel_other',
      endAt: new Date(minutes(2).getTime() + 1),
    });
    // Another runner claimed the slot at T0+1m (phase 1) and died before handing it off.
    const stranded = occurrenceId(schedule.id, minutes(1));
    await directly((storage) =>
      storage.cron.claimDueSchedules({
        now: minutes(1),
        workflowNames: ['quick'],
        limit: 1,
        plan: (row) => ({
          occurrences: [
            {
              id: stranded,
              scheduleId: row.id,
              workflowName: 'quick',
              context: { schedule_name: 'latest-wins' },
              scheduledTime: minutes(1),
              fireAt: minutes(1),
              claimedAt: minutes(1),
              claimedBy: 'dead',
              status: 'claimed',
              source: 'schedule',
              missedCount: 0,
            },
          ],
          nextRunAt: minutes(2),
          lastRunAt: minutes(1),
          runCount: 1,
        }),
      }),
    );

    clock.set(minutes(2));
    await runner.start();
    await waitFor(() => fired.length === 1 && skipped.length === 1);
    expect(fired[0]).toMatchObject({ scheduledTime: minutes(2) });
    expect(skipped[0]).toEqual({
      scheduleId: schedule.id,
      scheduleName: 'latest-wins',
      occurrenceId: stranded,
      scheduledTime: minutes(1),
      reason: 'overlap',
    });
    // Long past the lost threshold: recovery finds nothing to start.
    clock.set(minutes(10));
    await recovered(runner);
    expect(recoveredEvents).toEqual([]);
    expect(fired).toHaveLength(1);
    const history = await runner.getCronExecutionHistory('latest-wins');
    expect(history.map((row) => [row.scheduledTime, row.status, row.pipelineExecutionId])).toEqual([
      [minutes(2), 'handed_off', fired[0]!.pipelineExecutionId],
      [minutes(1), 'skipped', null],
    ]);
    expect(await runner.listExecutions({ scheduleId: schedule.id })).toHaveLength(1);
  });

  it('deleting a schedule skips its buffered occurrence, which never runs', async () => {
    const { runner, schedule, fired, buffered } = await holdingSchedule('doomed', 'buffer_one');
    clock.set(minutes(2));
    await waitFor(() => buffered.length === 1);
    await runner.deleteCronSchedule('doomed');

    // The active pipeline ends: nothing is left to release.
    const first = fired[0]!.pipelineExecutionId;
    heldGates.get(first)!.open();
    await waitFor(async () => (await runner.getExecutionStatus(first)) === 'completed');
    clock.set(minutes(3));
    await ticked(runner);
    expect(fired).toHaveLength(1);
    const ledger = await directly((storage) => storage.cron.listOccurrences(schedule.id, 10, 0));
    expect(ledger.map((row) => [row.scheduledTime, row.status])).toEqual([
      [minutes(2), 'skipped'],
      [minutes(1), 'handed_off'],
    ]);
  });

  it('maxRuns: 3 hands off exactly three occurrences, then disables the schedule', async () => {
    const runner = await open();
    const fired = events<CronFiredEvent>(runner, 'cron:fired');
    const paused = events<CronPausedEvent>(runner, 'cron:paused');
    await runner.addCronSchedule({ name: 'thrice', workflowName: 'quick', cronExpression: '* * * * *', maxRuns: 3 });
    await runner.start();
    for (let minute = 1; minute <= 5; minute += 1) {
      clock.set(minutes(minute));
      if (minute <= 3) await waitFor(() => fired.length === minute);
      else await ticked(runner);
    }
    expect(fired.map((event) => event.scheduledTime)).toEqual([minutes(1), minutes(2), minutes(3)]);
    expect(await runner.getCronSchedule('thrice')).toMatchObject({
      enabled: false,
      runCount: 3,
      note: 'maxRuns reached',
      nextRunAt: null,
    });
    expect(paused).toEqual([expect.objectContaining({ reason: 'max_runs', note: 'maxRuns reached' })]);
  });

  it('retries a failed slot: same pipeline, same scheduled_time, only its failed tasks run again', async () => {
    const runner = await open();
    const fired = events<CronFiredEvent>(runner, 'cron:fired');
    const retried: PipelineRetriedEvent[] = [];
    runner.on('pipeline:retried', (event) => retried.push(event));
    const schedule = await runner.addCronSchedule({
      name: 'nightly',
      workflowName: 'flaky',
      cronExpression: '* * * * *',
    });
    await runner.start();
    clock.set(minutes(1));
    await waitFor(() => fired.length === 1);
    const id = fired[0]!.pipelineExecutionId;
    await waitFor(async () => (await runner.getExecutionStatus(id)) === 'failed');
    await runner.setCronScheduleEnabled('nightly', false, { note: 'warehouse down' });
    expect((await runner.getCronSchedule('nightly')).note).toBe('warehouse down');

    checkBroken = false;
    const execution = await runner.retryExecution(id);
    expect(execution.id).toBe(id);
    const result = await execution.wait();
    expect(result.status).toBe('completed');
    expect(runs.get(id)).toEqual(['extract', 'check', 'check', 'publish']);
    expect(result.tasks.map((task) => [task.taskId, task.status, task.attempts])).toEqual([
      ['extract', 'completed', 1],
      ['check', 'completed', 2],
      // Attempt counters are kept: the claim that judged publish's trigger (and skipped it) was its first.
      ['publish', 'completed', 2],
    ]);
    expect(result.finalContext).toMatchObject({ rows: 3, published: true, scheduled_time: minutes(1).toISOString() });
    expect(scheduledTimes.get(id)).toEqual(minutes(1));
    expect(retried).toEqual([
      { executionId: id, workflowName: 'flaky', previousStatus: 'failed', retriedTasks: ['check', 'publish'] },
    ]);
    const [row] = await runner.getCronExecutionHistory('nightly');
    expect(row).toMatchObject({ scheduledTime: minutes(1), status: 'handed_off', pipelineExecutionId: id });
    const listed = await runner.listExecutions({ scheduleId: schedule.id });
    expect(listed).toEqual([
      expect.objectContaining({ executionId: id, scheduleId: schedule.id, scheduledTime: minutes(1) }),
    ]);
    await expect(runner.retryExecution(id)).rejects.toThrow(ValidationError);
    await expect(runner.retryExecution(id)).rejects.toThrow(/is completed; only a failed or cancelled/);
  });

  it('keeps a pipeline with runAt pending, its tasks unclaimed, until that instant', async () => {
    const runner = await open({ enableCronScheduling: false });
    await runner.start();
    const execution = await runner.executeAsync('quick', {}, { runAt: minutes(10) });
    const other = await runner.execute('quick');
    expect(other.status).toBe('completed');
    expect(await execution.status()).toBe('pending');
    clock.set(minutes(10));
    const result = await execution.wait();
    expect(result.status).toBe('completed');
    expect(result.startedAt!.getTime()).toBeGreaterThanOrEqual(minutes(10).getTime());
    await expect(runner.executeAsync('quick', {}, { runAt: new Date(Number.NaN) })).rejects.toThrow(ValidationError);
  });
});
