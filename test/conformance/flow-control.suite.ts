import {
  leaseOfTask,
  type OnLimit,
  type PipelineGroup,
  type PipelineRow,
  rateWindowMs,
  type Storage,
} from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import {
  at,
  CHAIN,
  completed,
  type OpenStorage,
  SINGLE,
  uniqueName,
  useStorage,
  type WorkflowFixture,
  workflowFixture,
} from './fixtures.js';

/**
 * Flow control in storage: pipelines of concurrency groups are queued at creation, admitted
 * while their groups have room (priority, then oldest), and `onLimit` acts at creation; the
 * claim takes higher priority first. Every rule is checked against both adapters.
 */
export function describeFlowControl(open: OpenStorage, openSecond?: () => Promise<Storage>): void {
  describe('flow control', () => {
    const storage = useStorage(open, 'each');
    const store = () => storage().executions;

    /** A fixture whose pipelines join `group` (one rule) with `limit`. */
    function limited(limit: number, onLimit: OnLimit = 'queue', dag = SINGLE) {
      const wf = workflowFixture(storage, dag);
      const group: PipelineGroup = { group: `${wf.name}/customer=acme`, limit, onLimit };
      const create = (overrides: Parameters<WorkflowFixture['create']>[0] = {}) =>
        wf.create({ concurrency: [group], ...overrides });
      return { wf, group, create };
    }

    async function statusesOf(ids: readonly string[]): Promise<string[]> {
      return Promise.all(ids.map(async (id) => (await store().getPipeline(id))!.status));
    }

    it('admits up to the limit at creation and queues the rest, their first tasks not claimable', async () => {
      const { wf, group, create } = limited(2);
      const pipelines: PipelineRow[] = [];
      for (let n = 0; n < 4; n += 1) pipelines.push(await create({ now: at(n) }));
      expect(pipelines.map((p) => p.concurrency)).toEqual(Array(4).fill([group]));
      const claimed = await wf.claim('r', at(10));
      expect(claimed.map((c) => c.pipeline.id).sort()).toEqual(
        pipelines
          .slice(0, 2)
          .map((p) => p.id)
          .sort(),
      );
      const queued = await store().listQueuedGroups(pipelines.map((p) => p.id));
      expect(queued.sort((a, b) => a.pipelineExecutionId.localeCompare(b.pipelineExecutionId))).toEqual(
        pipelines
          .slice(2)
          .map((p) => ({ pipelineExecutionId: p.id, group: group.group, active: 2, limit: 2 }))
          .sort((a, b) => a.pipelineExecutionId.localeCompare(b.pipelineExecutionId)),
      );
      expect((await store().listTasks(pipelines[3]!.id)).map((t) => t.status)).toEqual(['not_started']);
    });

    it('admits the oldest queued pipeline when an active one ends, and none while the group is full', async () => {
      const { wf, create } = limited(1);
      const first = await create({ now: at(0) });
      const second = await create({ now: at(1) });
      const third = await create({ now: at(2) });
      expect(await store().admitQueued(null, at(5))).toBe(0);
      const [claimed] = await wf.claim('r', at(10));
      expect(claimed!.pipeline.id).toBe(first.id);
      const ended = await wf.finish(claimed!, completed(), at(20));
      // Given on with the outcome's commit, or left to the caller (see FinishTaskResult.slotsGivenOn).
      expect(await store().admitQueued(null, at(30))).toBe(ended.slotsGivenOn ? 0 : 1);
      expect(await statusesOf([second.id, third.id])).toEqual(['pending', 'pending']);
      const next = await wf.claim('r', at(40));
      expect(next.map((c) => c.pipeline.id)).toEqual([second.id]);
      // Readied no earlier than its admission: it queues behind work already waiting.
      expect(next[0]!.task.availableAt).toEqual(ended.slotsGivenOn ? at(20) : at(30));
      expect(await store().listQueuedGroups([third.id])).toEqual([
        expect.objectContaining({ pipelineExecutionId: third.id, active: 1, limit: 1 }),
      ]);
    });

    it('keeps a paused pipeline active in its group, and gives its slot on when it is cancelled', async () => {
      const { wf, create } = limited(1);
      const first = await create({ now: at(0) });
      const second = await create({ now: at(1) });
      await wf.claim('r', at(2));
      await store().pausePipeline(first.id, 'hold', at(3));
      expect(await store().admitQueued(null, at(4))).toBe(0);
      await store().cancelPipeline(first.id, at(5));
      expect(await store().admitQueued(null, at(6))).toBe(1);
      expect((await wf.claim('r', at(7))).map((c) => c.pipeline.id)).toEqual([second.id]);
    });

    it('admits by priority, then by runAt or creation', async () => {
      const { wf, create } = limited(1);
      const blocker = await create({ now: at(0) });
      const low = await create({ now: at(1), priority: -5 });
      const old = await create({ now: at(2) });
      const delayed = await create({ now: at(3), runAt: at(-100) });
      const urgent = await create({ now: at(4), priority: 7 });
      const order: string[] = [];
      let claimed = await wf.claim('r', at(10));
      expect(claimed.map((c) => c.pipeline.id)).toEqual([blocker.id]);
      for (let round = 0; round < 4; round += 1) {
        await wf.finish(claimed[0]!, completed(), at(20 + round * 10));
        await store().admitQueued(null, at(21 + round * 10));
        claimed = await wf.claim('r', at(22 + round * 10));
        expect(claimed).toHaveLength(1);
        order.push(claimed[0]!.pipeline.id);
      }
      expect(order).toEqual([urgent.id, delayed.id, old.id, low.id]);
    });

    it('claims the ready tasks of higher-priority pipelines first, then the oldest', async () => {
      const wf = workflowFixture(storage, SINGLE);
      const old = await wf.create({ now: at(0) });
      const low = await wf.create({ now: at(1), priority: -1 });
      const high = await wf.create({ now: at(2), priority: 3 });
      const higher = await wf.create({ now: at(3), priority: 9 });
      const young = await wf.create({ now: at(4) });
      const first = await wf.claim('r', at(10), { limit: 2 });
      expect(first.map((c) => c.pipeline.id)).toEqual([higher.id, high.id]);
      const rest = await wf.claim('r', at(10), { limit: 5 });
      expect(rest.map((c) => c.pipeline.id)).toEqual([old.id, young.id, low.id]);
    });

    it('cancels a pipeline created over the limit with cancel_newest, naming the group', async () => {
      const { group, create } = limited(1, 'cancel_newest');
      const first = await create({ now: at(0) });
      const second = await create({ now: at(1) });
      expect(first.status).toBe('pending');
      expect(second).toMatchObject({ status: 'cancelled', error: `concurrency limit ${group.group} reached` });
      expect((await store().listTasks(second.id)).map((t) => t.status)).toEqual(['cancelled']);
      expect(await store().listQueuedGroups([second.id])).toEqual([]);
    });

    it('cancels the oldest active pipeline with cancel_in_progress, and admits the new one at once', async () => {
      const { wf, create } = limited(1, 'cancel_in_progress');
      const first = await create({ now: at(0) });
      await wf.claim('r', at(1));
      const second = await create({ now: at(2) });
      expect((await store().getPipeline(first.id))!).toMatchObject({
        status: 'cancelled',
        error: expect.stringMatching(/cancel_in_progress/),
      });
      expect(second.status).toBe('pending');
      expect((await wf.claim('r', at(3))).map((c) => c.pipeline.id)).toEqual([second.id]);
    });

    it('puts a retried pipeline back in the queue of its groups', async () => {
      const { wf, create } = limited(1, 'queue', CHAIN);
      const first = await create({ now: at(0) });
      const [a] = await wf.claim('r', at(1));
      await wf.finish(a!, { status: 'failed', error: 'boom' }, at(2));
      const [b] = await wf.claim('r', at(3));
      const ended = await wf.finish(b!, { status: 'skipped', reason: 'a failed' }, at(4));
      expect(ended.finishedPipeline?.status).toBe('failed');
      const second = await create({ now: at(5) });
      const [secondA] = await wf.claim('r', at(6));
      expect(secondA!.pipeline.id).toBe(second.id);
      const tasks = await store().listTasks(first.id);
      const retried = await store().retryPipeline(
        first.id,
        tasks.map((t) => ({ id: t.id, pendingDeps: t.taskId === 'a' ? 0 : 1 })),
        at(7),
      );
      expect(retried!.status).toBe('pending');
      expect((await store().listTasks(first.id)).map((t) => t.status)).toEqual(['not_started', 'not_started']);
      expect(await store().listQueuedGroups([first.id])).toEqual([
        expect.objectContaining({ pipelineExecutionId: first.id, active: 1, limit: 1 }),
      ]);
      await wf.finish(secondA!, completed(), at(8));
      const [secondB] = await wf.claim('r', at(9));
      const secondEnded = await wf.finish(secondB!, completed(), at(10));
      expect(await store().admitQueued(null, at(11))).toBe(secondEnded.slotsGivenOn ? 0 : 1);
      expect((await wf.claim('r', at(12))).map((c) => `${c.pipeline.id}/${c.task.taskId}`)).toEqual([`${first.id}/a`]);
    });

    it('starts a pipeline of two groups only when both have room', async () => {
      const wf = workflowFixture(storage, SINGLE);
      const tenant: PipelineGroup = { group: `${wf.name}/tenant=t1`, limit: 1, onLimit: 'queue' };
      const region: PipelineGroup = { group: `${wf.name}/region=eu`, limit: 5, onLimit: 'queue' };
      const other: PipelineGroup = { group: `${wf.name}/tenant=t2`, limit: 1, onLimit: 'queue' };
      const first = await wf.create({ now: at(0), concurrency: [tenant, region] });
      const blocked = await wf.create({ now: at(1), concurrency: [tenant, region] });
      const free = await wf.create({ now: at(2), concurrency: [other, region] });
      const claimed = await wf.claim('r', at(3));
      expect(claimed.map((c) => c.pipeline.id).sort()).toEqual([first.id, free.id].sort());
      expect(await store().listQueuedGroups([blocked.id])).toEqual([
        { pipelineExecutionId: blocked.id, group: tenant.group, active: 1, limit: 1 },
      ]);
    });

    it('gives the slots of the pipelines a batch ends on in its transaction when it carries a claim', async () => {
      const { wf, create } = limited(1);
      const first = await create({ now: at(0) });
      const second = await create({ now: at(1) });
      const [claimed] = await wf.claim('r', at(2));
      expect(claimed!.pipeline.id).toBe(first.id);
      const { finished, claimed: next } = await store().finishTasks([wf.request(claimed!, completed(), at(3))], {
        claim: { runnerId: 'r', registered: wf.registered, limit: 5, leaseMs: 1_000, now: at(3) },
      });
      expect(finished[0]).toMatchObject({ slotsGivenOn: true, finishedPipeline: { id: first.id } });
      // The claim of the same transaction took the pipeline its outcome let in.
      expect(next.map((c) => c.pipeline.id)).toEqual([second.id]);
    });

    it('creates a pipeline of a group once per idempotency key, holding one place in its queue', async () => {
      const { wf, group } = limited(1);
      const key = `key-${uniqueName()}`;
      await wf.create({ now: at(0), concurrency: [group] });
      const first = await store().createPipeline({
        ...newPipelineOf(wf),
        idempotencyKey: key,
        now: at(1),
        concurrency: [group],
      });
      const again = await store().createPipelines([
        { ...newPipelineOf(wf), idempotencyKey: key, now: at(2), concurrency: [group] },
      ]);
      expect(again).toEqual([{ pipeline: first.pipeline, created: false }]);
      expect(await store().listConcurrencyGroups(wf.name)).toEqual([
        { group: group.group, workflowName: wf.name, active: 1, queued: 1, limit: 1 },
      ]);
    });

    it('reports each group with its active and queued pipelines, leaving out ended ones', async () => {
      const { wf, group, create } = limited(2);
      const other = workflowFixture(storage, SINGLE);
      const otherGroup: PipelineGroup = { group: other.name, limit: 1, onLimit: 'queue' };
      const pipelines = [];
      for (let n = 0; n < 5; n += 1) pipelines.push(await create({ now: at(n) }));
      await other.create({ now: at(0), concurrency: [otherGroup] });
      await store().cancelPipeline(pipelines[4]!.id, at(6));
      expect(await store().listConcurrencyGroups(wf.name)).toEqual([
        { group: group.group, workflowName: wf.name, active: 2, queued: 2, limit: 2 },
      ]);
      const all = await store().listConcurrencyGroups(null);
      expect(all.filter((row) => [wf.name, other.name].includes(row.workflowName))).toEqual(
        [
          { group: group.group, workflowName: wf.name, active: 2, queued: 2, limit: 2 },
          { group: other.name, workflowName: other.name, active: 1, queued: 0, limit: 1 },
        ].sort((a, b) => a.workflowName.localeCompare(b.workflowName)),
      );
    });

    it('keeps a delayed task unclaimable until its delay after it became ready has passed', async () => {
      const wf = workflowFixture(storage, CHAIN);
      const request = newPipelineOf(wf);
      const created = await store().createPipeline({
        ...request,
        now: at(0),
        tasks: [
          { id: crypto.randomUUID(), taskId: 'a', position: 0, pendingDeps: 0, delayMs: 100 },
          { id: crypto.randomUUID(), taskId: 'b', position: 1, pendingDeps: 1, delayMs: 1_000 },
        ],
      });
      expect(await wf.claim('r', at(99))).toEqual([]);
      const [a] = await wf.claim('r', at(100));
      expect(a!.task.taskId).toBe('a');
      await wf.finish(a!, completed(), at(150));
      const tasks = await store().listTasks(created.pipeline.id);
      expect(tasks.map((t) => [t.taskId, t.status, t.availableAt])).toEqual([
        ['a', 'completed', at(100)],
        ['b', 'ready', at(1_150)],
      ]);
      expect(await wf.claim('r', at(1_149))).toEqual([]);
      expect((await wf.claim('r', at(1_150))).map((c) => c.task.taskId)).toEqual(['b']);
    });

    it('counts a delayed first task of a queued pipeline from its admission', async () => {
      const { wf, group } = limited(1);
      const first = await wf.create({ now: at(0), concurrency: [group] });
      const second = await store().createPipeline({
        ...newPipelineOf(wf),
        now: at(1),
        concurrency: [group],
        tasks: [{ id: crypto.randomUUID(), taskId: 'only', position: 0, pendingDeps: 0, delayMs: 500 }],
      });
      const [claimed] = await wf.claim('r', at(2));
      expect(claimed!.pipeline.id).toBe(first.id);
      const ended = await wf.finish(claimed!, completed(), at(1_000));
      if (!ended.slotsGivenOn) await store().admitQueued(null, at(1_000));
      expect((await store().listTasks(second.pipeline.id))[0]!.availableAt).toEqual(at(1_500));
    });

    it('counts rate-limited starts per bucket and gives the rest back unstarted, spread by herds', async () => {
      const wf = workflowFixture(storage, SINGLE);
      for (let n = 0; n < 7; n += 1) await wf.create({ now: at(n) });
      const other = await wf.create({ now: at(7) });
      const claimed = await wf.claim('r', at(10));
      expect(claimed).toHaveLength(8);
      const start = (c: (typeof claimed)[number], bucket = 'crm') => ({
        runnerId: 'r',
        ...leaseOfTask(c.task),
        bucket,
        limit: 2,
        periodMs: 60_000,
        now: at(20),
      });
      const gate = async (c: (typeof claimed)[number], bucket = 'crm') =>
        (await store().startRateLimited([start(c, bucket)]))[0]!;
      // One batch of three, then one at a time: the same count either way.
      const ours = claimed.filter((c) => c.pipeline.id !== other.id);
      const results = await store().startRateLimited(ours.slice(0, 3).map((c) => start(c)));
      for (const c of ours.slice(3)) results.push(await gate(c));
      expect(results.map((r) => r.status)).toEqual(['started', 'started', ...Array(5).fill('deferred')]);
      const times = results.slice(2).map((r) => (r.status === 'deferred' ? r.availableAt.getTime() : Number.NaN));
      // Two per window: the herd waiting for one instant of room is spread a window apart per `limit` of it.
      const window = rateWindowMs({ periodMs: 60_000 });
      expect(times.map((t) => t - times[0]!)).toEqual([0, 0, window, window, 2 * window]);
      // Another bucket has its own count.
      expect(await gate(claimed.find((c) => c.pipeline.id === other.id)!, 'crm/customer=acme')).toEqual({
        status: 'started',
      });
      const deferred = claimed.filter((c) => c.pipeline.id !== other.id).slice(2);
      for (const [index, c] of deferred.entries()) {
        const [row] = await store().listTasks(c.pipeline.id);
        expect(row).toMatchObject({
          status: 'ready',
          attempt: 0,
          leaseOwner: null,
          leaseExpiresAt: null,
          startedAt: null,
          failedAttempts: 0,
          availableAt: new Date(times[index]!),
        });
      }
      // The lease is gone: a second word on it writes nothing.
      expect(await gate(deferred[0]!)).toEqual({ status: 'lost' });
      // Retention forgets the starts no window counts any more: none before they expire, all three after.
      expect(await store().deleteExpiredRateLimitStarts(at(0), 100)).toBe(0);
      expect(await store().deleteExpiredRateLimitStarts(new Date('2200-01-01T00:00:00Z'), 100)).toBe(3);
    });

    it('keeps a signal sent early, ignores a second one, and refuses unknown and ended executions', async () => {
      const wf = workflowFixture(storage, CHAIN);
      const pipeline = await store().createPipeline({
        ...newPipelineOf(wf),
        tasks: [
          { id: crypto.randomUUID(), taskId: 'a', position: 0, pendingDeps: 0 },
          { id: crypto.randomUUID(), taskId: 'b', position: 1, pendingDeps: 1, waitSignal: 'approved' },
        ],
      });
      const id = pipeline.pipeline.id;
      const signal = (name: string, payload: unknown = null, executionId = id) =>
        store().sendSignal({ executionId, name, payload: payload as never, now: at(5) });
      expect(await signal('approved', 'yes')).toBe('sent');
      expect(await signal('approved', 'no')).toBe('duplicate');
      expect(await signal('approved', 1, crypto.randomUUID())).toBe('unknown');
      const [a] = await wf.claim('r', at(10));
      await wf.finish(a!, completed(), at(11));
      const [b] = await wf.claim('r', at(12));
      expect(b!.task.taskId).toBe('b');
      // The claim brings the stored signal along; waitForSignal finds the same.
      expect(b!.signal).toEqual({ payload: 'yes' });
      const found = await store().waitForSignal({
        runnerId: 'r',
        ...leaseOfTask(b!.task),
        name: 'approved',
        now: at(12),
        waitsUntil: null,
        sleepUntil: at(1_000_000),
      });
      expect(found).toEqual({ status: 'signalled', payload: 'yes' });
      await wf.finish(b!, completed({ b: 'yes' }), at(13));
      expect(await signal('late')).toBe('terminal');
    });

    it('gives a wait task back until its deadline, and a signal wakes it at once', async () => {
      const wf = workflowFixture(storage, SINGLE);
      const created = await store().createPipeline({
        ...newPipelineOf(wf),
        tasks: [{ id: crypto.randomUUID(), taskId: 'only', position: 0, pendingDeps: 0, waitSignal: 'go' }],
      });
      const [claimed] = await wf.claim('r', at(10));
      expect(claimed!.signal).toBeUndefined();
      const wait = (now: Date, sleepUntil: Date | null, waitsUntil: Date | null, task = claimed!.task) =>
        store().waitForSignal({ runnerId: 'r', ...leaseOfTask(task), name: 'go', now, waitsUntil, sleepUntil });
      expect(await wait(at(10), at(5_000), at(5_000))).toEqual({ status: 'waiting' });
      const [row] = await store().listTasks(created.pipeline.id);
      expect(row).toMatchObject({ status: 'ready', attempt: 0, availableAt: at(5_000), waitsUntil: at(5_000) });
      expect(await wf.claim('r', at(4_999))).toEqual([]);
      // The claim was undone: the lease is gone.
      expect(await wait(at(11), at(5_000), at(5_000))).toEqual({ status: 'lost' });
      expect(
        await store().sendSignal({ executionId: created.pipeline.id, name: 'go', payload: { ok: true }, now: at(20) }),
      ).toBe('sent');
      const [again] = await wf.claim('r', at(20));
      expect(again!.task).toMatchObject({ taskId: 'only', attempt: 1, waitsUntil: at(5_000) });
      expect(again!.signal).toEqual({ payload: { ok: true } });
      expect(await wait(at(20), at(5_000), at(5_000), again!.task)).toEqual({
        status: 'signalled',
        payload: { ok: true },
      });
    });

    it('claims a wait task with its stored signal (null, or text Postgres cannot hold), and other tasks without', async () => {
      const wf = workflowFixture(storage, CHAIN);
      const waiting = (signal: string) => ({
        ...newPipelineOf(wf),
        tasks: [
          { id: crypto.randomUUID(), taskId: 'a', position: 0, pendingDeps: 0, waitSignal: signal },
          { id: crypto.randomUUID(), taskId: 'b', position: 1, pendingDeps: 1 },
        ],
      });
      const nulled = await store().createPipeline(waiting('go'));
      const other = await store().createPipeline(waiting('go'));
      const awkward = await store().createPipeline(waiting('go'));
      const plain = await wf.create({ now: at(1) });
      // A signal of another name, and one to another execution, are not this task's.
      await store().sendSignal({ executionId: nulled.pipeline.id, name: 'go', payload: null, now: at(2) });
      await store().sendSignal({ executionId: other.pipeline.id, name: 'stop', payload: 'no', now: at(2) });
      await store().sendSignal({ executionId: plain.id, name: 'go', payload: 'no', now: at(2) });
      const text = { nul: 'a\u0000b', lone: 'x\ud800y' };
      await store().sendSignal({ executionId: awkward.pipeline.id, name: 'go', payload: text, now: at(2) });
      const claimed = await wf.claim('r', at(10));
      const byPipeline = new Map(claimed.map((c) => [c.pipeline.id, c]));
      expect(claimed).toHaveLength(4);
      expect(byPipeline.get(awkward.pipeline.id)!.signal).toEqual({ payload: text });
      expect(byPipeline.get(nulled.pipeline.id)!.signal).toEqual({ payload: null });
      expect(byPipeline.get(other.pipeline.id)!.signal).toBeUndefined();
      expect(byPipeline.get(plain.id)!.signal).toBeUndefined();
    });

    it('says a wait task timed out when its deadline has passed without the signal', async () => {
      const wf = workflowFixture(storage, SINGLE);
      await store().createPipeline({
        ...newPipelineOf(wf),
        tasks: [{ id: crypto.randomUUID(), taskId: 'only', position: 0, pendingDeps: 0, waitSignal: 'go' }],
      });
      const [claimed] = await wf.claim('r', at(10));
      expect(
        await store().waitForSignal({
          runnerId: 'r',
          ...leaseOfTask(claimed!.task),
          name: 'go',
          now: at(10),
          waitsUntil: at(5),
          sleepUntil: null,
        }),
      ).toEqual({ status: 'timedOut' });
    });

    it('leaves workflows without rules as they were: ready at once, no slots', async () => {
      const wf = workflowFixture(storage, SINGLE);
      const created = await Promise.all([0, 1, 2].map((n) => wf.create({ now: at(n) })));
      expect(created.map((p) => p.concurrency)).toEqual([null, null, null]);
      expect(await store().listQueuedGroups(created.map((p) => p.id))).toEqual([]);
      expect(await wf.claim('r', at(5))).toHaveLength(3);
    });

    if (openSecond !== undefined) {
      it('never admits more than the limit when two storages create and admit at once', async () => {
        const second = await openSecond();
        try {
          const name = uniqueName();
          const group: PipelineGroup = { group: `${name}/k`, limit: 3, onLimit: 'queue' };
          const wf = workflowFixture(storage, SINGLE);
          const stores = [store(), second.executions];
          // 40 pipelines created from two connections at once, then admissions racing.
          await Promise.all(
            Array.from({ length: 40 }, (_, n) =>
              stores[n % 2]!.createPipelines([{ ...newPipelineOf(wf), concurrency: [group], now: at(n) }]),
            ),
          );
          await Promise.all(Array.from({ length: 10 }, (_, n) => stores[n % 2]!.admitQueued([group.group], at(100))));
          const claimed = await wf.claim('r', at(200));
          expect(claimed).toHaveLength(3);
        } finally {
          await second.close();
        }
      });

      it('never leaves a wait task asleep once its signal is stored, however a signal and its wait interleave', async () => {
        const second = await openSecond();
        try {
          const wf = workflowFixture(storage, SINGLE);
          for (let n = 0; n < 20; n += 1) {
            const created = await store().createPipeline({
              ...newPipelineOf(wf),
              tasks: [{ id: crypto.randomUUID(), taskId: 'only', position: 0, pendingDeps: 0, waitSignal: 'go' }],
            });
            const [claimed] = await wf.claim('r', at(10));
            // The wait (looking, then giving the task back for good) and the signal, from two connections at once.
            const [found, sent] = await Promise.all([
              store().waitForSignal({
                runnerId: 'r',
                ...leaseOfTask(claimed!.task),
                name: 'go',
                now: at(10),
                waitsUntil: null,
                sleepUntil: at(10_000_000),
              }),
              second.executions.sendSignal({ executionId: created.pipeline.id, name: 'go', payload: n, now: at(11) }),
            ]);
            expect(sent).toBe('sent');
            if (found.status === 'signalled') {
              expect(found.payload).toBe(n);
              continue;
            }
            // Given back before the signal: the signal woke it, and the next claim brings the signal along.
            expect(found.status).toBe('waiting');
            const [again] = await wf.claim('r', at(11));
            expect(again!.task.pipelineExecutionId).toBe(created.pipeline.id);
            expect(again!.signal).toEqual({ payload: n });
          }
        } finally {
          await second.close();
        }
      });
    }
  });
}

/** A new pipeline of the fixture's workflow, as its `create` would write it. */
function newPipelineOf(wf: WorkflowFixture) {
  return {
    id: crypto.randomUUID(),
    workflowName: wf.name,
    workflowVersion: 'v1',
    input: {},
    idempotencyKey: null,
    scheduledTime: null,
    now: at(0),
    tasks: [{ id: crypto.randomUUID(), taskId: 'only', position: 0, pendingDeps: 0 }],
  };
}
