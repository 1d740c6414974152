import { ConfigurationError, DatabaseError, OrreryError } from '@orreryjs/core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  allPipelines,
  type CronHarness,
  type HarnessOptions,
  MINUTE,
  openHarness,
  SECOND,
  T0,
} from './support/cron-harness.js';

let h: CronHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const at = (ms: number) => new Date(T0.getTime() + ms);
class SimulatedCrash extends OrreryError {
  constructor() {
    super('SIMULATED_CRASH', 'simulated crash');
  }
}
const crash = () => {
  throw new SimulatedCrash();
};
// Recovery takes rows whose fire time is more than lostThresholdMs (60 s) in the past.
const PAST_LOST = MINUTE + SECOND;

async function setUp(options: HarnessOptions = {}, schedules = 1) {
  h = await openHarness(options);
  for (let i = 0; i < schedules; i += 1) {
    await h.cron.addSchedule({ name: `s${i}`, workflowName: 'wf', cronExpression: '* * * * *', context: { i } });
  }
  return h;
}

/** Each ledger row of the given schedules is handed off and linked to exactly one pipeline of its own. */
async function expectExactlyOnePipelinePerOccurrence(h: CronHarness, names: string[]) {
  const pipelines = await allPipelines(h.storage);
  const byKey = new Map(pipelines.map((pipeline) => [pipeline.idempotencyKey, pipeline]));
  expect(byKey.size).toBe(pipelines.length);
  let occurrences = 0;
  for (const name of names) {
    for (const row of await h.cron.history(name, { limit: 1000 })) {
      occurrences += 1;
      expect(row.status).toBe('handed_off');
      expect(byKey.get(row.id)?.id).toBe(row.pipelineExecutionId);
    }
  }
  expect(pipelines).toHaveLength(occurrences);
}

describe('crash points', () => {
  it('after phase 1: the claimed rows are recovered by another runner, once each', async () => {
    const h = await setUp({ faults: { afterPhase1: crash } }, 3);
    h.clock.set(at(MINUTE));
    await expect(h.cron.tick()).rejects.toThrow(SimulatedCrash);
    expect(await allPipelines(h.storage)).toEqual([]);
    const survivor = h.another({ faults: {} });
    expect(await survivor.cron.recover()).toEqual({ recovered: 0, abandoned: 0, retried: 0, released: 0 });
    h.clock.set(at(MINUTE + PAST_LOST));
    expect(await survivor.cron.recover()).toEqual({ recovered: 3, abandoned: 0, retried: 0, released: 0 });
    expect(await survivor.cron.recover()).toEqual({ recovered: 0, abandoned: 0, retried: 0, released: 0 });
    await expectExactlyOnePipelinePerOccurrence(h, ['s0', 's1', 's2']);
    const [pipeline] = await allPipelines(h.storage);
    expect(pipeline!.input).toMatchObject({
      is_recovery: true,
      recovery_attempt: 1,
      schedule_name: expect.any(String),
    });
    const [row] = await h.cron.history('s0');
    expect(row).toMatchObject({ recovered: true, recoveryAttempts: 1 });
    expect(survivor.eventsOf('cron:lost')).toHaveLength(3);
    expect(survivor.eventsOf('cron:recovered').map((event) => event.recoveryAttempt)).toEqual([1, 1, 1]);
  });

  it('after handoff, before phase 2: recovery links the existing pipeline instead of starting another', async () => {
    const h = await setUp({ faults: { afterHandoff: crash } });
    h.clock.set(at(MINUTE));
    await expect(h.cron.tick()).rejects.toThrow(SimulatedCrash);
    const [started] = await allPipelines(h.storage);
    expect(started!.input).not.toHaveProperty('is_recovery');
    const survivor = h.another({ faults: {} });
    h.clock.set(at(MINUTE + PAST_LOST));
    expect(await survivor.cron.recover()).toEqual({ recovered: 1, abandoned: 0, retried: 0, released: 0 });
    await expectExactlyOnePipelinePerOccurrence(h, ['s0']);
    expect((await h.cron.history('s0'))[0]!.pipelineExecutionId).toBe(started!.id);
    expect(survivor.eventsOf('cron:recovered')[0]!.pipelineExecutionId).toBe(started!.id);
  });

  it('during recovery: a later pass, after the recovery lease expires, finishes it with no duplicate', async () => {
    const h = await setUp({ faults: { afterPhase1: crash } }, 2);
    h.clock.set(at(MINUTE));
    await expect(h.cron.tick()).rejects.toThrow(SimulatedCrash);
    const crashing = h.another({ faults: { duringRecovery: crash } });
    h.clock.set(at(MINUTE + PAST_LOST));
    await expect(crashing.cron.recover()).rejects.toThrow(SimulatedCrash);
    const healthy = h.another({ runnerId: 'runner-c', faults: {} });
    // The crashed runner's recovery lease (lostThresholdMs) still holds the rows.
    expect(await healthy.cron.recover()).toEqual({ recovered: 0, abandoned: 0, retried: 0, released: 0 });
    h.clock.advance(MINUTE + SECOND);
    expect(await healthy.cron.recover()).toEqual({ recovered: 2, abandoned: 0, retried: 0, released: 0 });
    await expectExactlyOnePipelinePerOccurrence(h, ['s0', 's1']);
    const rows = [...(await h.cron.history('s0')), ...(await h.cron.history('s1'))];
    expect(rows.map((row) => row.recoveryAttempts)).toEqual([2, 2]);
  });

  it('every crash point in a row of ticks still ends with one pipeline per occurrence', async () => {
    let calls = 0;
    const faults = {
      afterPhase1: () => {
        calls += 1;
        if (calls % 3 === 0) crash();
      },
      afterHandoff: () => {
        if (calls % 3 === 1) crash();
      },
    };
    const h = await setUp({ faults }, 2);
    for (let minute = 1; minute <= 9; minute += 1) {
      h.clock.set(at(minute * MINUTE));
      await h.cron.tick().catch((error: unknown) => {
        if (!(error instanceof SimulatedCrash)) throw error;
      });
      await h.cron.recover();
    }
    h.clock.advance(5 * MINUTE);
    const survivor = h.another({ faults: {} });
    await survivor.cron.recover();
    await expectExactlyOnePipelinePerOccurrence(h, ['s0', 's1']);
    expect(await allPipelines(h.storage)).toHaveLength(18);
  });
});

describe('failed handoffs', () => {
  it('leave the row claimed without failing the tick; recovery hands it off later', async () => {
    const h = await setUp();
    h.executor.failNext.push(new DatabaseError('database is locked'));
    h.clock.set(at(MINUTE));
    expect(await h.cron.tick()).toEqual({ claimed: 1, handedOff: 0 });
    expect((await h.cron.history('s0'))[0]!.status).toBe('claimed');
    h.clock.set(at(MINUTE + PAST_LOST));
    expect(await h.cron.recover()).toEqual({ recovered: 1, abandoned: 0, retried: 0, released: 0 });
    await expectExactlyOnePipelinePerOccurrence(h, ['s0']);
  });

  it('retries a failed recovery after lostThresholdMs · 2^n, refunding the attempt for a DatabaseError', async () => {
    const h = await setUp();
    h.executor.failNext.push(new Error('handoff'), new Error('boom'), new Error('boom'), new DatabaseError('down'));
    h.clock.set(at(MINUTE));
    await h.cron.tick();
    h.clock.set(at(MINUTE + PAST_LOST));
    expect(await h.cron.recover()).toEqual({ recovered: 0, abandoned: 0, retried: 1, released: 0 });
    const [afterFirst] = await h.storage.cron.listOccurrences((await h.cron.getSchedule('s0')).id, 1, 0);
    expect(afterFirst).toMatchObject({
      status: 'claimed',
      recoveryAttempts: 1,
      nextRecoveryAt: at(MINUTE + PAST_LOST + 2 * MINUTE),
    });
    h.clock.advance(2 * MINUTE - 1);
    expect(await h.cron.recover()).toEqual({ recovered: 0, abandoned: 0, retried: 0, released: 0 });
    h.clock.advance(1);
    expect(await h.cron.recover()).toEqual({ recovered: 0, abandoned: 0, retried: 1, released: 0 });
    h.clock.advance(4 * MINUTE);
    expect(await h.cron.recover()).toEqual({ recovered: 0, abandoned: 0, retried: 1, released: 0 });
    const [afterDbError] = await h.cron.history('s0');
    expect(afterDbError!.recoveryAttempts).toBe(2);
    h.clock.advance(8 * MINUTE);
    expect(await h.cron.recover()).toEqual({ recovered: 1, abandoned: 0, retried: 0, released: 0 });
    expect((await h.cron.history('s0'))[0]).toMatchObject({
      status: 'handed_off',
      recovered: true,
      recoveryAttempts: 3,
    });
  });
});

describe('abandoning', () => {
  it('abandons after maxRecoveryAttempts with a cron:abandoned event', async () => {
    const h = await setUp({ settings: { maxRecoveryAttempts: 2 } });
    h.executor.failNext.push(...Array.from({ length: 3 }, () => new Error('boom')));
    h.clock.set(at(MINUTE));
    await h.cron.tick();
    h.clock.set(at(MINUTE + PAST_LOST));
    expect(await h.cron.recover()).toEqual({ recovered: 0, abandoned: 0, retried: 1, released: 0 });
    h.clock.advance(2 * MINUTE);
    expect(await h.cron.recover()).toEqual({ recovered: 0, abandoned: 0, retried: 1, released: 0 });
    h.clock.advance(4 * MINUTE);
    expect(await h.cron.recover()).toEqual({ recovered: 0, abandoned: 1, retried: 0, released: 0 });
    const [row] = await h.cron.history('s0');
    expect(row).toMatchObject({ status: 'abandoned', abandonReason: expect.stringMatching(/2 recovery attempts/) });
    expect(h.eventsOf('cron:abandoned')).toEqual([
      { scheduleId: row!.scheduleId, occurrenceId: row!.id, scheduledTime: at(MINUTE), reason: row!.abandonReason },
    ]);
    expect(await allPipelines(h.storage)).toEqual([]);
  });

  it('abandons scheduled occurrences of a disabled or deleted schedule, but still runs a manual one', async () => {
    const h = await setUp({ faults: { afterPhase1: crash } }, 3);
    h.clock.set(at(MINUTE));
    await expect(h.cron.tick()).rejects.toThrow(SimulatedCrash);
    h.executor.failNext.push(new Error('handoff failed'));
    await expect(h.cron.trigger('s2')).rejects.toThrow('handoff failed');
    await h.cron.setEnabled('s0', false);
    await h.cron.setEnabled('s2', false);
    await h.cron.deleteSchedule('s1');
    h.clock.set(at(MINUTE + PAST_LOST));
    expect(await h.cron.recover()).toEqual({ recovered: 1, abandoned: 3, retried: 0, released: 0 });
    const reasons = h
      .eventsOf('cron:abandoned')
      .map((event) => event.reason)
      .sort();
    expect(reasons).toEqual(['schedule was deleted', 'schedule was disabled', 'schedule was disabled']);
    const manual = (await h.cron.history('s2')).find((row) => row.source === 'manual');
    expect(manual).toMatchObject({ status: 'handed_off', recovered: true });
  });

  it('abandons an occurrence claimed longer ago than maxRecoveryAgeMs', async () => {
    const h = await setUp({ faults: { afterPhase1: crash }, settings: { maxRecoveryAgeMs: 10 * MINUTE } });
    h.clock.set(at(MINUTE));
    await expect(h.cron.tick()).rejects.toThrow(SimulatedCrash);
    h.clock.set(at(12 * MINUTE));
    expect(await h.cron.recover()).toEqual({ recovered: 0, abandoned: 1, retried: 0, released: 0 });
    expect(h.eventsOf('cron:abandoned')[0]!.reason).toMatch(/maxRecoveryAgeMs/);
  });
});

describe('two runners recovering at once', () => {
  it('recover each lost occurrence exactly once', async () => {
    const h = await setUp({ faults: { afterPhase1: crash }, settings: { batchSize: 100 } }, 40);
    h.clock.set(at(MINUTE));
    await expect(h.cron.tick()).rejects.toThrow(SimulatedCrash);
    const a = await h.anotherProcess({ runnerId: 'runner-x', faults: {}, settings: { batchSize: 7 } });
    const b = await h.anotherProcess({ runnerId: 'runner-y', faults: {}, settings: { batchSize: 7 } });
    h.clock.set(at(MINUTE + PAST_LOST));
    let recovered = 0;
    for (let round = 0; round < 10; round += 1) {
      const results = await Promise.all([a.cron.recover(), b.cron.recover(), a.cron.recover(), b.cron.recover()]);
      recovered += results.reduce((sum, result) => sum + result.recovered, 0);
    }
    expect(recovered).toBe(40);
    const events = [...a.eventsOf('cron:recovered'), ...b.eventsOf('cron:recovered')];
    expect(new Set(events.map((event) => event.occurrenceId)).size).toBe(40);
    expect(events).toHaveLength(40);
    expect(a.eventsOf('cron:recovered').length).toBeGreaterThan(0);
    expect(b.eventsOf('cron:recovered').length).toBeGreaterThan(0);
    await expectExactlyOnePipelinePerOccurrence(
      h,
      Array.from({ length: 40 }, (_, i) => `s${i}`),
    );
  });
});

describe('link first, then decide', () => {
  it('links the pipeline of a deleted or disabled schedule instead of abandoning it', async () => {
    const h = await setUp({ faults: { afterHandoff: crash } }, 2);
    h.clock.set(at(MINUTE));
    await expect(h.cron.tick()).rejects.toThrow(SimulatedCrash);
    const started = await allPipelines(h.storage);
    expect(started).toHaveLength(2);
    await h.cron.deleteSchedule('s0');
    await h.cron.setEnabled('s1', false);
    const survivor = h.another({ faults: {} });
    h.clock.set(at(MINUTE + PAST_LOST));
    expect(await survivor.cron.recover()).toEqual({ recovered: 2, abandoned: 0, retried: 0, released: 0 });
    for (const pipeline of started) {
      expect(await h.storage.cron.getOccurrence(pipeline.idempotencyKey!)).toMatchObject({
        status: 'handed_off',
        recovered: true,
        pipelineExecutionId: pipeline.id,
      });
    }
    expect(survivor.eventsOf('cron:abandoned')).toEqual([]);
    expect(await allPipelines(h.storage)).toHaveLength(2);
  });

  it('links the pipeline of an occurrence older than maxRecoveryAgeMs instead of abandoning it', async () => {
    const h = await setUp({ faults: { afterHandoff: crash }, settings: { maxRecoveryAgeMs: 10 * MINUTE } });
    h.clock.set(at(MINUTE));
    await expect(h.cron.tick()).rejects.toThrow(SimulatedCrash);
    const [started] = await allPipelines(h.storage);
    h.clock.set(at(12 * MINUTE));
    const survivor = h.another({ faults: {} });
    expect(await survivor.cron.recover()).toEqual({ recovered: 1, abandoned: 0, retried: 0, released: 0 });
    expect((await h.cron.history('s0'))[0]).toMatchObject({ status: 'handed_off', pipelineExecutionId: started!.id });
    expect(survivor.eventsOf('cron:abandoned')).toEqual([]);
  });
});

describe('shutdown during a recovery pass', () => {
  it('refunds the attempt and releases the row when the executor refuses for shutdown', async () => {
    const h = await setUp({ faults: { afterPhase1: crash } });
    h.clock.set(at(MINUTE));
    await expect(h.cron.tick()).rejects.toThrow(SimulatedCrash);
    h.clock.set(at(MINUTE + PAST_LOST));
    const stopping = h.another({ faults: {} });
    // Four quick restarts, each refused mid-pass: none may use up an attempt.
    for (let restart = 0; restart < 4; restart += 1) {
      stopping.executor.failNext.push(new ConfigurationError('This runner was shut down.'));
      expect(await stopping.cron.recover()).toEqual({ recovered: 0, abandoned: 0, retried: 0, released: 1 });
      expect((await h.cron.history('s0'))[0]).toMatchObject({ status: 'claimed', recoveryAttempts: 0 });
    }
    const [row] = await h.storage.cron.listOccurrences((await h.cron.getSchedule('s0')).id, 1, 0);
    expect(row).toMatchObject({ recoveryLeaseOwner: null, recoveryLeaseExpiresAt: null });
    // Released at once: the next runner takes it without waiting out a lease or a back-off.
    const next = h.another({ runnerId: 'runner-c', faults: {} });
    expect(await next.cron.recover()).toEqual({ recovered: 1, abandoned: 0, retried: 0, released: 0 });
    expect((await h.cron.history('s0'))[0]).toMatchObject({ status: 'handed_off', recoveryAttempts: 1 });
    expect(h.eventsOf('cron:abandoned')).toEqual([]);
  });

  it('stops the pass once its signal aborts, releasing the rest untried', async () => {
    const h = await setUp({ faults: { afterPhase1: crash } }, 3);
    h.clock.set(at(MINUTE));
    await expect(h.cron.tick()).rejects.toThrow(SimulatedCrash);
    h.clock.set(at(MINUTE + PAST_LOST));
    const stopping = h.another({ faults: {} });
    const abort = new AbortController();
    abort.abort();
    expect(await stopping.cron.recover(abort.signal)).toEqual({ recovered: 0, abandoned: 0, retried: 0, released: 3 });
    expect(stopping.executor.calls).toBe(0);
    for (const name of ['s0', 's1', 's2']) {
      expect((await h.cron.history(name))[0]).toMatchObject({ status: 'claimed', recoveryAttempts: 0 });
    }
  });
});

describe('recovery age', () => {
  it('counts from the fire time, so a long-jittered row left by a graceful restart is recovered', async () => {
    const h = await setUp({ settings: { maxRecoveryAgeMs: 5 * MINUTE } });
    const schedule = await h.cron.getSchedule('s0');
    const slot = at(MINUTE);
    // What a tick writes for a slot jittered 30 minutes late; the runner then stopped gracefully before firing it.
    const id = '2b0f5a52-5d4a-5b4e-9b1e-3c1c7f6e9a01';
    await h.storage.cron.insertOccurrences([
      {
        id,
        scheduleId: schedule.id,
        workflowName: 'wf',
        context: {},
        scheduledTime: slot,
        fireAt: at(31 * MINUTE),
        claimedAt: slot,
        claimedBy: 'runner-gone',
        status: 'claimed',
        source: 'schedule',
        missedCount: 0,
      },
    ]);
    h.clock.set(at(31 * MINUTE + PAST_LOST));
    expect(await h.cron.recover()).toEqual({ recovered: 1, abandoned: 0, retried: 0, released: 0 });
    expect(await h.storage.cron.getOccurrence(id)).toMatchObject({ status: 'handed_off', recovered: true });
  });

  it('still abandons a row whose handoff was due longer ago than maxRecoveryAgeMs', async () => {
    const h = await setUp({ faults: { afterPhase1: crash }, settings: { maxRecoveryAgeMs: 5 * MINUTE } });
    h.clock.set(at(MINUTE));
    await expect(h.cron.tick()).rejects.toThrow(SimulatedCrash);
    h.clock.set(at(7 * MINUTE));
    expect(await h.cron.recover()).toEqual({ recovered: 0, abandoned: 1, retried: 0, released: 0 });
  });
});
