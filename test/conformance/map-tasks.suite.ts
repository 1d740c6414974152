import {
  type ClaimedTask,
  type FinishTaskRequest,
  type Json,
  leaseOfTask,
  MAP_LEASE_OWNER,
  MAX_MAP_ITEMS,
  type Storage,
  type TaskOutcome,
} from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { at, completed, type OpenStorage, useStorage, type WorkflowFixture, workflowFixture } from './fixtures.js';

/** A map task `fan` and its dependent `after`. */
const FAN = { fan: [], after: ['fan'] };

/**
 * Map tasks in storage (see core's map.ts): a claimed map task parks and starts one instance
 * per item, fenced on its lease; instances are claimed like tasks; their outcomes settle the
 * task once (the last completed, or the first failed), in item order; pause, retry and the
 * claim's context treat the parked task and its instances right. Both adapters.
 */
export function describeMapTasks(open: OpenStorage, openSecond?: () => Promise<Storage>): void {
  describe('map tasks', () => {
    const storage = useStorage(open, 'each');
    const store = () => storage().executions;

    /** A pipeline of FAN whose `fan` is claimed and started with `items`; returns its instances' rows. */
    async function mapped(wf: WorkflowFixture, items: Json[]) {
      const pipeline = await wf.create({ now: at(0) });
      const [fan] = await wf.claim('r', at(1));
      expect(fan!.task.taskId).toBe('fan');
      expect(await store().startMap({ runnerId: 'r', ...leaseOfTask(fan!.task), items, now: at(2) })).toBe(true);
      return { pipeline, fan: fan! };
    }

    /** The finish request of a claimed instance. */
    function instanceRequest(
      wf: WorkflowFixture,
      claimed: ClaimedTask,
      outcome: TaskOutcome,
      now: Date,
    ): FinishTaskRequest {
      return {
        ...wf.request(claimed, outcome, now),
        dependents: ['after'],
        mapInstance: { taskId: claimed.task.mapOf!, index: claimed.task.mapIndex! },
      };
    }

    const result = (claimed: ClaimedTask, value: Json): TaskOutcome => completed({ [claimed.task.taskId]: value });
    /** Every instance of a pipeline's map task (one page as large as a map can be). */
    const instancesOf = (pipelineId: string, taskId: string) =>
      store().listMapInstances(pipelineId, taskId, { limit: MAX_MAP_ITEMS, offset: 0 });

    it('lists a page of the instances in item order', async () => {
      const wf = workflowFixture(storage, FAN);
      const { pipeline } = await mapped(wf, ['a', 'b', 'c', 'd', 'e']);
      const page = async (limit: number, offset: number) =>
        (await store().listMapInstances(pipeline.id, 'fan', { limit, offset })).map((i) => i.mapIndex);
      expect(await page(2, 0)).toEqual([0, 1]);
      expect(await page(2, 2)).toEqual([2, 3]);
      expect(await page(10, 3)).toEqual([3, 4]);
      expect(await page(1, 5)).toEqual([]);
    });

    it('starts one instance per item, fenced on the lease; the task parks and the instances are listed apart', async () => {
      const wf = workflowFixture(storage, FAN);
      const pipeline = await wf.create({ now: at(0) });
      const [fan] = await wf.claim('r', at(1));
      const lease = { ...leaseOfTask(fan!.task), items: ['a'], now: at(2) };
      expect(await store().startMap({ ...lease, runnerId: 'other' })).toBe(false);
      expect(await store().startMap({ ...lease, runnerId: 'r', attempt: 2 })).toBe(false);
      expect(await instancesOf(pipeline.id, 'fan')).toEqual([]);
      expect(await store().startMap({ ...lease, runnerId: 'r', items: ['a', { b: 1 }, null] })).toBe(true);
      const instances = await instancesOf(pipeline.id, 'fan');
      expect(instances.map((i) => [i.taskId, i.status, i.mapOf, i.mapIndex, i.mapItem])).toEqual([
        ['fan[0]', 'ready', 'fan', 0, { value: 'a', attempt: 1 }],
        ['fan[1]', 'ready', 'fan', 1, { value: { b: 1 }, attempt: 1 }],
        ['fan[2]', 'ready', 'fan', 2, { value: null, attempt: 1 }],
      ]);
      const tasks = await store().listTasks(pipeline.id);
      expect(tasks.map((t) => [t.taskId, t.status, t.leaseOwner, t.leaseExpiresAt, t.pendingDeps])).toEqual([
        ['fan', 'running', MAP_LEASE_OWNER, null, 3],
        ['after', 'not_started', null, null, 1],
      ]);
      expect(await store().countMapInstances(pipeline.id)).toEqual([
        { taskId: 'fan', total: 3, completed: 0, failed: 0, running: 0 },
      ]);
      // Parked, the task is no expired lease: however late, only its instances are claimable.
      const claimed = await wf.claim('r2', at(1_000_000));
      expect(claimed.map((c) => c.task.taskId).sort()).toEqual(['fan[0]', 'fan[1]', 'fan[2]']);
      expect(await store().countStalledTasks(at(1_000_000))).toBe(0);
    });

    it('completes the task with the results in item order once the last instance completes, readying its dependent', async () => {
      const wf = workflowFixture(storage, FAN);
      const { pipeline } = await mapped(wf, ['x', 'y', 'z']);
      const instances = await wf.claim('r', at(3));
      const byIndex = (index: number) => instances.find((c) => c.task.mapIndex === index)!;
      // The claim's context leaves instances out; they carry their item.
      expect(byIndex(1).terminalTasks).toEqual([]);
      // Two in one batch, out of order, then the last.
      const first = await store().finishTasks([
        instanceRequest(wf, byIndex(2), result(byIndex(2), 'Z'), at(4)),
        instanceRequest(wf, byIndex(0), result(byIndex(0), 'X'), at(4)),
      ]);
      expect(first.finished.map((f) => [f.accepted, f.readied])).toEqual([
        [true, 0],
        [true, 0],
      ]);
      expect((await store().listTasks(pipeline.id))[0]!.status).toBe('running');
      const last = await store().finishTasks([instanceRequest(wf, byIndex(1), result(byIndex(1), 'Y'), at(5))]);
      expect(last.finished[0]).toMatchObject({ accepted: true, readied: 1, finishedPipeline: null });
      const [fan, after] = await store().listTasks(pipeline.id);
      expect(fan!.status).toBe('completed');
      expect(fan!.output).toEqual({ set: { fan: ['X', 'Y', 'Z'] }, deleted: [] });
      expect(fan!.leaseOwner).toBeNull();
      expect(after!.status).toBe('ready');
      // The dependent sees the task's output, not its instances'.
      const [next] = await wf.claim('r', at(6));
      expect(next!.task.taskId).toBe('after');
      expect(next!.terminalTasks.map((t) => t.taskId)).toEqual(['fan']);
      const ended = await wf.finish(next!, completed(), at(7));
      expect(ended.finishedPipeline).toMatchObject({ status: 'completed', remainingTasks: 0, failedTasks: 0 });
      expect(await store().countMapInstances(pipeline.id)).toEqual([
        { taskId: 'fan', total: 3, completed: 3, failed: 0, running: 0 },
      ]);
    });

    it('fails the task once when an instance fails for good, cancelling the others and fencing their outcomes out', async () => {
      const wf = workflowFixture(storage, FAN);
      const { pipeline } = await mapped(wf, [0, 1, 2]);
      const instances = await wf.claim('r', at(3));
      const byIndex = (index: number) => instances.find((c) => c.task.mapIndex === index)!;
      await store().finishTasks([instanceRequest(wf, byIndex(0), result(byIndex(0), 0), at(4))]);
      const failed = await store().finishTasks([
        instanceRequest(wf, byIndex(2), { status: 'failed', error: 'boom' }, at(5)),
      ]);
      // The dependent (trigger all_success by default, judged by the runner) is readied: the task is terminal.
      expect(failed.finished[0]).toMatchObject({ accepted: true, readied: 1 });
      const [fan] = await store().listTasks(pipeline.id);
      expect(fan).toMatchObject({ status: 'failed', error: 'item 2 failed: boom', attemptHistory: null });
      const rows = await instancesOf(pipeline.id, 'fan');
      expect(rows.map((r) => r.status)).toEqual(['completed', 'cancelled', 'failed']);
      // The cancelled instance's late outcome is refused; nothing settles twice.
      const late = await store().finishTasks([instanceRequest(wf, byIndex(1), result(byIndex(1), 1), at(6))]);
      expect(late.finished[0]!.accepted).toBe(false);
      expect(await store().getPipeline(pipeline.id)).toMatchObject({ failedTasks: 1, remainingTasks: 1 });
    });

    it('pauses the instances but not the parked task, and a retry maps the task anew', async () => {
      const wf = workflowFixture(storage, FAN);
      const { pipeline } = await mapped(wf, ['a', 'b']);
      const [one] = await wf.claim('r', at(3), { limit: 1 });
      await store().pausePipeline(pipeline.id, null, at(4));
      const paused = await instancesOf(pipeline.id, 'fan');
      expect(paused.map((r) => [r.status, r.leaseOwner])).toEqual([
        ['ready', null],
        ['ready', null],
      ]);
      expect((await store().listTasks(pipeline.id))[0]).toMatchObject({
        status: 'running',
        leaseOwner: MAP_LEASE_OWNER,
      });
      await store().resumePipeline(pipeline.id, at(5));
      // The paused attempt's outcome is fenced out; a new claim runs the instance again.
      expect(
        (await store().finishTasks([instanceRequest(wf, one!, result(one!, 'A'), at(6))])).finished[0]!.accepted,
      ).toBe(false);
      const again = await wf.claim('r', at(7));
      expect(again.map((c) => c.task.taskId).sort()).toEqual(['fan[0]', 'fan[1]']);
      await store().finishTasks([instanceRequest(wf, again[0]!, { status: 'failed', error: 'no' }, at(8))]);
      await store().cancelPipeline(pipeline.id, at(9));
      const [fan, after] = await store().listTasks(pipeline.id);
      await store().retryPipeline(
        pipeline.id,
        [
          { id: fan!.id, pendingDeps: 0 },
          { id: after!.id, pendingDeps: 1 },
        ],
        at(10),
      );
      expect(await instancesOf(pipeline.id, 'fan')).toEqual([]);
      const [refan] = await wf.claim('r', at(11));
      expect(refan!.task.taskId).toBe('fan');
      expect(await store().startMap({ runnerId: 'r', ...leaseOfTask(refan!.task), items: ['c'], now: at(12) })).toBe(
        true,
      );
      // Under the task's later attempt: a runner reads the input of this mapping anew.
      expect((await instancesOf(pipeline.id, 'fan')).map((r) => r.mapItem)).toEqual([{ value: 'c', attempt: 2 }]);
    });

    if (openSecond !== undefined) {
      it('settles the task exactly once when its last instances complete in two transactions at once', async () => {
        const second = await openSecond();
        try {
          for (let round = 0; round < 5; round += 1) {
            const wf = workflowFixture(storage, FAN);
            const { pipeline } = await mapped(wf, [0, 1]);
            const [a, b] = await wf.claim('r', at(3));
            const [x, y] = await Promise.all([
              store().finishTasks([instanceRequest(wf, a!, result(a!, a!.task.mapIndex!), at(4))]),
              second.executions.finishTasks([instanceRequest(wf, b!, result(b!, b!.task.mapIndex!), at(4))]),
            ]);
            expect(x.finished[0]!.readied + y.finished[0]!.readied).toBe(1);
            const [fan, after] = await store().listTasks(pipeline.id);
            expect(fan!.output).toEqual({ set: { fan: [0, 1] }, deleted: [] });
            expect(after).toMatchObject({ status: 'ready', pendingDeps: 0 });
          }
        } finally {
          await second.close();
        }
      });
    }
  });
}
