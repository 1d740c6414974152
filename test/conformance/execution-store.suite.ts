import { IdempotencyConflictError, leaseOfTask, newId, ValidationError } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import {
  at,
  CHAIN,
  completed,
  DIAMOND,
  LEASE_MS,
  newPipeline,
  type OpenStorage,
  SINGLE,
  uniqueName,
  useStorage,
  type WorkflowFixture,
  workflowFixture,
} from './fixtures.js';

/**
 * ExecutionStore behaviour. Tests share one database per block and stay apart by using a
 * workflow name of their own (claims only see registered workflows); tests of whole-table
 * queries get a fresh database each.
 */
export function describeExecutionStore(open: OpenStorage): void {
  describe('ExecutionStore', () => {
    describe('per workflow', () => {
      const storage = useStorage(open, 'all');
      const store = () => storage().executions;
      const fixture = (dag = SINGLE) => workflowFixture(storage, dag);

      describe('createPipeline', () => {
        it('inserts a pending pipeline and every task row, ready when it has no dependencies', async () => {
          const wf = fixture(DIAMOND);
          const request = newPipeline(wf.name, DIAMOND, {
            input: { n: 1, nested: { list: [1, 'two'] } },
            scheduledTime: at(-1000),
            now: at(5),
          });
          const result = await store().createPipeline(request);
          const expected = {
            id: request.id,
            workflowName: wf.name,
            workflowVersion: 'v1',
            status: 'pending',
            input: { n: 1, nested: { list: [1, 'two'] } },
            idempotencyKey: null,
            scheduledTime: at(-1000),
            scheduleId: null,
            remainingTasks: 3,
            failedTasks: 0,
            error: null,
            pauseReason: null,
            traceContext: null,
            runAt: null,
            priority: 0,
            concurrency: null,
            createdAt: at(5),
            startedAt: null,
            completedAt: null,
            updatedAt: at(5),
          };
          expect(result).toEqual({ pipeline: expected, created: true });
          expect(await store().getPipeline(request.id)).toEqual(expected);
          expect(await store().listTasks(request.id)).toEqual(
            request.tasks.map((task) => ({
              id: task.id,
              pipelineExecutionId: request.id,
              workflowName: wf.name,
              taskId: task.taskId,
              position: task.position,
              status: task.pendingDeps === 0 ? 'ready' : 'not_started',
              attempt: 0,
              failedAttempts: 0,
              pendingDeps: task.pendingDeps,
              availableAt: at(5),
              leaseOwner: null,
              leaseExpiresAt: null,
              runnerId: null,
              attemptHistory: null,
              output: null,
              error: null,
              startedAt: null,
              completedAt: null,
              waitsUntil: null,
              mapOf: null,
              mapIndex: null,
              mapItem: null,
            })),
          );
        });

        it('returns the first pipeline for a taken idempotency key and writes nothing', async () => {
          const wf = fixture(CHAIN);
          const key = newId();
          const first = await store().createPipeline(newPipeline(wf.name, CHAIN, { idempotencyKey: key, now: at(1) }));
          const again = newPipeline(wf.name, DIAMOND, { idempotencyKey: key, input: { again: true }, now: at(2) });
          expect(await store().createPipeline(again)).toEqual({ pipeline: first.pipeline, created: false });
          expect(await store().getPipeline(again.id)).toBeNull();
          expect(await store().listTasks(again.id)).toEqual([]);
          expect((await store().listTasks(first.pipeline.id)).map((task) => task.taskId)).toEqual(['a', 'b']);
          expect(await store().listPipelines({ workflowName: wf.name, limit: 10, offset: 0 })).toEqual([
            first.pipeline,
          ]);
        });

        it('stores any number of pipelines without an idempotency key', async () => {
          const wf = fixture();
          await wf.create();
          await wf.create();
          expect(await store().listPipelines({ workflowName: wf.name, limit: 10, offset: 0 })).toHaveLength(2);
        });
      });

      describe('trace context', () => {
        it('stores the trace context of each pipeline and returns it from every read and the claim', async () => {
          const wf = fixture();
          const traced = {
            traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
            tracestate: 'vendor=a,other=b',
          };
          const [withTrace, without] = await store().createPipelines([
            newPipeline(wf.name, SINGLE, { traceContext: traced, now: at(1) }),
            newPipeline(wf.name, SINGLE, { now: at(2) }),
          ]);
          expect(withTrace!.pipeline.traceContext).toEqual(traced);
          expect(without!.pipeline.traceContext).toBeNull();
          expect(await store().getPipeline(withTrace!.pipeline.id)).toMatchObject({ traceContext: traced });
          expect(
            (await store().listPipelines({ workflowName: wf.name, limit: 10, offset: 0 })).map((p) => p.traceContext),
          ).toEqual([null, traced]);
          const claimed = await wf.claim('r1', at(3));
          expect(new Map(claimed.map((c) => [c.pipeline.id, c.pipeline.traceContext]))).toEqual(
            new Map([
              [withTrace!.pipeline.id, traced],
              [without!.pipeline.id, null],
            ]),
          );
        });
      });

      describe('createPipelines', () => {
        it('creates each pipeline with its tasks in one call, results in input order', async () => {
          const wf = fixture(DIAMOND);
          const requests = [0, 1, 2].map((n) => newPipeline(wf.name, DIAMOND, { input: { n }, now: at(n) }));
          const results = await store().createPipelines(requests);
          expect(results.map((r) => [r.pipeline.id, r.created, r.pipeline.input])).toEqual(
            requests.map((r) => [r.id, true, r.input]),
          );
          for (const [i, request] of requests.entries()) {
            expect(await store().getPipeline(request.id)).toEqual(results[i]!.pipeline);
            expect((await store().listTasks(request.id)).map((t) => [t.taskId, t.status])).toEqual([
              ['a', 'ready'],
              ['b', 'ready'],
              ['c', 'not_started'],
            ]);
          }
          expect(await store().createPipelines([])).toEqual([]);
        });

        it('returns the holder of a key taken before or earlier in the batch, writing nothing for it', async () => {
          const wf = fixture(CHAIN);
          const [takenKey, batchKey] = [newId(), newId()];
          const earlier = await store().createPipeline(newPipeline(wf.name, CHAIN, { idempotencyKey: takenKey }));
          const requests = [
            newPipeline(wf.name, CHAIN, { idempotencyKey: takenKey }),
            newPipeline(wf.name, CHAIN, { idempotencyKey: batchKey }),
            newPipeline(wf.name, CHAIN, { idempotencyKey: batchKey }),
            newPipeline(wf.name, CHAIN),
          ];
          const results = await store().createPipelines(requests);
          expect(results.map((r) => [r.pipeline.id, r.created])).toEqual([
            [earlier.pipeline.id, false],
            [requests[1]!.id, true],
            [requests[1]!.id, false],
            [requests[3]!.id, true],
          ]);
          for (const skipped of [requests[0]!, requests[2]!]) {
            expect(await store().getPipeline(skipped.id)).toBeNull();
            expect(await store().listTasks(skipped.id)).toEqual([]);
          }
          expect(await store().listPipelines({ workflowName: wf.name, limit: 10, offset: 0 })).toHaveLength(3);
        });

        it('writes nothing of the batch when one of its pipelines cannot be written', async () => {
          const wf = fixture(CHAIN);
          const existing = await store().createPipeline(newPipeline(wf.name, CHAIN));
          const existingTasks = await store().listTasks(existing.pipeline.id);
          const before = newPipeline(wf.name, CHAIN, { idempotencyKey: newId() });
          // Same id as a stored pipeline, no idempotency key: the database refuses it.
          const clash = { ...newPipeline(wf.name, CHAIN), id: existing.pipeline.id };
          const after = newPipeline(wf.name, CHAIN);
          await expect(store().createPipelines([before, clash, after])).rejects.toThrow();
          for (const request of [before, after]) {
            expect(await store().getPipeline(request.id)).toBeNull();
            expect(await store().listTasks(request.id)).toEqual([]);
          }
          expect(await store().getPipelineByIdempotencyKey(before.idempotencyKey!)).toBeNull();
          expect(await store().listPipelines({ workflowName: wf.name, limit: 10, offset: 0 })).toEqual([
            existing.pipeline,
          ]);
          expect((await store().listTasks(existing.pipeline.id)).map((t) => t.id)).toEqual(
            existingTasks.map((t) => t.id),
          );
        });
      });

      describe('createPipelines with allOrNothing', () => {
        it('refuses the whole batch, writing nothing, when a key belongs to another workflow', async () => {
          const wf = fixture(CHAIN);
          const other = fixture(CHAIN);
          const key = uniqueName('key');
          const holder = await store().createPipeline(newPipeline(other.name, CHAIN, { idempotencyKey: key }));
          const before = newPipeline(wf.name, CHAIN);
          const clash = newPipeline(wf.name, CHAIN, { idempotencyKey: key });
          const failure = await store()
            .createPipelines([before, clash], { allOrNothing: true })
            .catch((error: unknown) => error);
          expect(failure).toBeInstanceOf(IdempotencyConflictError);
          expect((failure as Error).message).toContain(holder.pipeline.id);
          expect(await store().getPipeline(before.id)).toBeNull();
          expect(await store().listTasks(before.id)).toEqual([]);
        });

        it('returns the holder of a key the same workflow already used, as without the option', async () => {
          const wf = fixture(CHAIN);
          const key = uniqueName('key');
          const holder = await store().createPipeline(newPipeline(wf.name, CHAIN, { idempotencyKey: key }));
          const fresh = newPipeline(wf.name, CHAIN);
          const results = await store().createPipelines([fresh, newPipeline(wf.name, CHAIN, { idempotencyKey: key })], {
            allOrNothing: true,
          });
          expect(results.map((r) => [r.pipeline.id, r.created])).toEqual([
            [fresh.id, true],
            [holder.pipeline.id, false],
          ]);
        });
      });

      describe('getPipeline and getPipelineByIdempotencyKey', () => {
        it('finds a pipeline by id and by idempotency key, and returns null for unknown ones', async () => {
          const wf = fixture();
          const key = uniqueName('key');
          const pipeline = await wf.create({ idempotencyKey: key });
          expect(await store().getPipeline(pipeline.id)).toEqual(pipeline);
          expect(await store().getPipelineByIdempotencyKey(key)).toEqual(pipeline);
          expect(await store().getPipeline(newId())).toBeNull();
          expect(await store().getPipelineByIdempotencyKey(uniqueName('key'))).toBeNull();
        });
      });

      describe('listPipelineIdsByPrefix', () => {
        it('lists the ids starting with a hex prefix in id order, up to the limit, boundaries included', async () => {
          const wf = fixture();
          // A prefix of this test's own: 8 random hex digits, neither all 0s nor all fs.
          const base = (0x10000000 + Math.floor(Math.random() * 0xd0000000)).toString(16);
          const next = (Number.parseInt(base, 16) + 1).toString(16).padStart(8, '0');
          const previous = (Number.parseInt(base, 16) - 1).toString(16).padStart(8, '0');
          const first = `${base}-0000-0000-0000-000000000000`;
          const one = `${base}-0000-4000-8000-000000000001`;
          const two = `${base}-0000-4000-8000-000000000002`;
          const last = `${base}-ffff-ffff-ffff-ffffffffffff`;
          const outside = [`${previous}-ffff-ffff-ffff-ffffffffffff`, `${next}-0000-0000-0000-000000000000`];
          for (const id of [two, outside[0]!, last, one, outside[1]!, first]) await wf.create({ id });

          const hex = (id: string) => id.replaceAll('-', '');
          expect(await store().listPipelineIdsByPrefix(base, 10)).toEqual([first, one, two, last]);
          expect(await store().listPipelineIdsByPrefix(base, 2)).toEqual([first, one]);
          expect(await store().listPipelineIdsByPrefix(hex(one).slice(0, 31), 10)).toEqual([one, two]);
          expect(await store().listPipelineIdsByPrefix(hex(two), 10)).toEqual([two]);
          expect(await store().listPipelineIdsByPrefix(`${hex(two).slice(0, 31)}3`, 10)).toEqual([]);
        });

        it('refuses a prefix that is not 1 to 32 lower-case hex digits', async () => {
          for (const prefix of ['', 'abcdefgh', 'ABCDEF12', '1234abcd-12', 'a'.repeat(33)]) {
            await expect(store().listPipelineIdsByPrefix(prefix, 10), prefix).rejects.toBeInstanceOf(ValidationError);
          }
        });
      });

      describe('listPipelines', () => {
        it("lists a workflow's pipelines newest first, by status, a page at a time", async () => {
          const wf = fixture();
          const pipelines = [];
          for (const ms of [1, 2, 3, 4, 5]) pipelines.push(await wf.create({ now: at(ms) }));
          await fixture().create({ now: at(6) });
          const cancelled = await store().cancelPipeline(pipelines[1]!.id, at(7));
          const ids = (rows: Array<{ id: string }>) => rows.map((row) => row.id);
          const newestFirst = ids(pipelines).reverse();
          const list = (filter: object) =>
            store().listPipelines({ workflowName: wf.name, limit: 10, offset: 0, ...filter });
          expect(ids(await list({}))).toEqual(newestFirst);
          expect(ids(await list({ limit: 2, offset: 1 }))).toEqual(newestFirst.slice(1, 3));
          expect(ids(await list({ offset: 5 }))).toEqual([]);
          expect(await list({ status: 'cancelled' })).toEqual([cancelled]);
          expect(ids(await list({ status: 'pending' }))).toEqual(newestFirst.filter((id) => id !== cancelled!.id));
        });
      });

      describe('listTasks', () => {
        it('lists tasks in canonical order, not by id or name, and nothing for an unknown pipeline', async () => {
          const dag = { e: [], d: [], c: ['e'], b: [], a: ['c', 'd'] };
          const pipeline = await fixture(dag).create();
          expect((await store().listTasks(pipeline.id)).map((task) => [task.taskId, task.position])).toEqual([
            ['e', 0],
            ['d', 1],
            ['c', 2],
            ['b', 3],
            ['a', 4],
          ]);
          expect(await store().listTasks(newId())).toEqual([]);
        });
      });

      describe('claimTasks', () => {
        it('leases ready tasks of registered task ids only and marks their pipeline running', async () => {
          const wf = fixture({ a: [], b: [], c: ['a'] });
          const unregistered = fixture();
          const pipeline = await wf.create();
          const other = await unregistered.create();
          const claimed = await store().claimTasks({
            runnerId: 'r1',
            registered: [
              { workflowName: wf.name, taskIds: ['a', 'c'] },
              { workflowName: uniqueName(), taskIds: ['only'] },
            ],
            limit: 10,
            leaseMs: 1000,
            now: at(100),
          });
          expect(claimed).toHaveLength(1);
          expect(claimed[0]!.leaseExpired).toBe(false);
          expect(claimed[0]!.terminalTasks).toEqual([]);
          expect(claimed[0]!.task).toMatchObject({
            pipelineExecutionId: pipeline.id,
            taskId: 'a',
            status: 'running',
            attempt: 1,
            failedAttempts: 0,
            leaseOwner: 'r1',
            leaseExpiresAt: at(1100),
            startedAt: at(100),
          });
          expect(claimed[0]!.pipeline).toMatchObject({ id: pipeline.id, status: 'running', startedAt: at(100) });
          expect(await store().getPipeline(pipeline.id)).toMatchObject({ status: 'running', startedAt: at(100) });
          expect((await store().listTasks(pipeline.id)).map((task) => [task.taskId, task.status])).toEqual([
            ['a', 'running'],
            ['b', 'ready'],
            ['c', 'not_started'],
          ]);
          expect(await store().getPipeline(other.id)).toEqual(other);
          expect(
            await store().claimTasks({ runnerId: 'r1', registered: [], limit: 10, leaseMs: 1000, now: at(100) }),
          ).toEqual([]);
        });

        it('claims a task from its availableAt on, never before', async () => {
          const wf = fixture();
          await wf.create({ now: at(1000) });
          expect(await wf.claim('r1', at(999))).toEqual([]);
          expect(await wf.claim('r1', at(1000))).toHaveLength(1);
        });

        it('claims at most limit tasks, those available longest first', async () => {
          const wf = fixture();
          const second = await wf.create({ now: at(2) });
          await wf.create({ now: at(3) });
          const first = await wf.create({ now: at(1) });
          const claimed = await wf.claim('r1', at(10), { limit: 2 });
          expect(claimed.map((c) => c.pipeline.id).sort()).toEqual([first.id, second.id].sort());
          expect(await wf.claim('r1', at(10), { limit: 5 })).toHaveLength(1);
          expect(await wf.claim('r1', at(10))).toEqual([]);
        });

        it('claims nothing from paused or cancelled pipelines', async () => {
          const wf = fixture();
          const paused = await wf.create();
          const cancelled = await wf.create();
          await store().pausePipeline(paused.id, null, at(1));
          await store().cancelPipeline(cancelled.id, at(1));
          expect(await wf.claim('r1', at(2))).toEqual([]);
        });

        it('takes over an expired lease as a failed attempt and fences out the previous owner', async () => {
          const wf = fixture(CHAIN);
          await wf.create();
          const [first] = await wf.claim('r1', at(0));
          expect(await wf.claim('r2', at(999))).toEqual([]);
          const [takeover, ...rest] = await wf.claim('r2', at(1001));
          expect(rest).toEqual([]);
          expect(takeover!.leaseExpired).toBe(true);
          expect(takeover!.task).toMatchObject({
            id: first!.task.id,
            status: 'running',
            attempt: 2,
            failedAttempts: 1,
            leaseOwner: 'r2',
            leaseExpiresAt: at(2001),
            startedAt: at(1001),
          });
          expect(takeover!.pipeline.status).toBe('running');
          expect(await wf.finish(first!, completed(), at(1002))).toEqual({
            accepted: false,
            readied: 0,
            finishedPipeline: null,
          });
          expect((await store().listTasks(first!.task.pipelineExecutionId))[0]).toMatchObject({
            status: 'running',
            leaseOwner: 'r2',
            attempt: 2,
          });
        });

        it('leaves tasks claimed ahead unstarted, and takes over their expired leases without charging an attempt', async () => {
          const wf = fixture();
          const pipelines = [await wf.create({ now: at(1) }), await wf.create({ now: at(2) })];
          pipelines.push(await wf.create({ now: at(3) }), await wf.create({ now: at(4) }));
          const claimed = await wf.claim('r1', at(10), { startNow: 1 });
          const byPipeline = new Map(claimed.map((c) => [c.task.pipelineExecutionId, c]));
          const [started, renewed, finished, neverRan] = pipelines.map((p) => byPipeline.get(p.id)!);
          // The oldest starts now; the other three wait for a slot, leased but not started.
          expect([started, renewed, finished, neverRan].map((c) => c!.task.startedAt)).toEqual([
            at(10),
            null,
            null,
            null,
          ]);
          // One starts and its renewal records it; one starts and its outcome records it; one never runs.
          expect(
            await store().renewLeases('r1', [leaseOfTask(renewed!.task)], LEASE_MS, at(20), { started: true }),
          ).toEqual([renewed!.task.id]);
          expect(await store().renewLeases('r1', [leaseOfTask(neverRan!.task)], LEASE_MS, at(20))).toEqual([
            neverRan!.task.id,
          ]);
          expect(
            (await wf.finish(finished!, { status: 'retry', error: 'x', availableAt: at(5000) }, at(30))).accepted,
          ).toBe(true);
          const rows = async (c: typeof started) => (await store().listTasks(c!.task.pipelineExecutionId))[0]!;
          expect((await rows(renewed)).startedAt).toEqual(at(20));
          expect((await rows(neverRan)).startedAt).toBeNull();
          expect((await rows(finished)).startedAt).toEqual(at(30));
          // r1 dies: every lease runs out. Only the attempts whose code started count as failed.
          const takeovers = await wf.claim('r2', at(20 + LEASE_MS + 1));
          const taken = new Map(takeovers.map((c) => [c.task.pipelineExecutionId, c]));
          expect(taken.size).toBe(3);
          expect(taken.get(started!.task.pipelineExecutionId)).toMatchObject({
            leaseExpired: true,
            task: { attempt: 2, failedAttempts: 1, error: 'lease expired (held by r1)' },
          });
          expect(taken.get(renewed!.task.pipelineExecutionId)).toMatchObject({
            leaseExpired: true,
            task: { attempt: 2, failedAttempts: 1 },
          });
          expect(taken.get(neverRan!.task.pipelineExecutionId)).toMatchObject({
            leaseExpired: false,
            task: { attempt: 2, failedAttempts: 0, error: null, leaseOwner: 'r2' },
          });
        });

        it("hands over the pipeline's terminal tasks with their outputs, in canonical order", async () => {
          const wf = fixture(DIAMOND);
          await wf.create();
          const claimed = await wf.claim('r1', at(1));
          const byId = (taskId: string) => claimed.find((c) => c.task.taskId === taskId)!;
          const output = { set: { a: 1, nested: { k: 'v' } }, deleted: ['gone'] };
          await wf.finish(byId('b'), { status: 'skipped', reason: 'when() was false' }, at(2));
          await wf.finish(byId('a'), { status: 'completed', output }, at(3));
          const [child] = await wf.claim('r1', at(4));
          expect(child!.task.taskId).toBe('c');
          expect(child!.terminalTasks.map((task) => [task.taskId, task.status, task.output])).toEqual([
            ['a', 'completed', output],
            ['b', 'skipped', null],
          ]);
        });
      });

      describe('renewLeases', () => {
        it('extends only the leases the runner still holds at the given attempt', async () => {
          const wf = fixture(DIAMOND);
          const pipeline = await wf.create();
          const claimed = await wf.claim('r1', at(0));
          const [a, b] = ['a', 'b'].map((id) => claimed.find((c) => c.task.taskId === id)!.task);
          const leases = [leaseOfTask(a!), { ...leaseOfTask(b!), attempt: 2 }];
          expect(await store().renewLeases('r1', leases, 5000, at(500))).toEqual([a!.id]);
          expect(await store().renewLeases('r2', leases, 5000, at(500))).toEqual([]);
          expect(await store().renewLeases('r1', [], 5000, at(500))).toEqual([]);
          const tasks = await store().listTasks(pipeline.id);
          expect(tasks.map((task) => task.leaseExpiresAt)).toEqual([at(5500), at(1000), null]);
          const [takeover, ...rest] = await wf.claim('r2', at(1001));
          expect(rest).toEqual([]);
          expect(takeover!.task.id).toBe(b!.id);
          expect(await store().renewLeases('r1', [{ ...leaseOfTask(b!), attempt: 1 }], 5000, at(1002))).toEqual([]);
        });
      });

      describe('releaseLeases', () => {
        it('gives leases back as ready tasks without counting a failed attempt', async () => {
          const wf = fixture();
          const pipeline = await wf.create();
          const [first] = await wf.claim('r1', at(0));
          const lease = leaseOfTask(first!.task);
          expect(await store().releaseLeases('r2', [lease], at(10))).toBe(0);
          expect(await store().releaseLeases('r1', [{ ...lease, attempt: 2 }], at(10))).toBe(0);
          expect(await store().releaseLeases('r1', [], at(10))).toBe(0);
          expect(await store().releaseLeases('r1', [lease], at(10))).toBe(1);
          expect((await store().listTasks(pipeline.id))[0]).toMatchObject({
            status: 'ready',
            failedAttempts: 0,
            leaseOwner: null,
            leaseExpiresAt: null,
          });
          expect((await wf.finish(first!, completed(), at(11))).accepted).toBe(false);
          const [again] = await wf.claim('r2', at(10));
          expect(again!.leaseExpired).toBe(false);
          expect(again!.task).toMatchObject({ attempt: 2, failedAttempts: 0, leaseOwner: 'r2' });
        });
      });

      describe('attempt history', () => {
        /** The stored entry of an attempt that did not complete (instants in epoch ms, as stored). */
        const entry = (
          attempt: number,
          runnerId: string,
          startedAt: number,
          endedAt: number,
          outcome: string,
          error: string | null,
        ) => ({
          attempt,
          runnerId,
          startedAt: at(startedAt).getTime(),
          endedAt: at(endedAt).getTime(),
          outcome,
          error,
        });

        it('keeps each failed and timed-out attempt with its runner and error, and the completing runner in the row', async () => {
          const wf = fixture();
          const pipeline = await wf.create();
          const [first] = await wf.claim('r1', at(0));
          await wf.finish(first!, { status: 'retry', error: 'boom', availableAt: at(1000) }, at(100));
          const [second] = await wf.claim('r2', at(1000));
          expect(second!.task.attemptHistory).toEqual([entry(1, 'r1', 0, 100, 'failed', 'boom')]);
          const timedOut = { status: 'retry', error: 'timed out', availableAt: at(2000), timedOut: true } as const;
          expect((await wf.finish(second!, timedOut, at(1500))).accepted).toBe(true);
          const [third] = await wf.claim('r1', at(2000));
          await wf.finish(third!, completed(), at(2100));
          expect((await store().listTasks(pipeline.id))[0]).toMatchObject({
            status: 'completed',
            attempt: 3,
            runnerId: 'r1',
            leaseOwner: null,
            startedAt: at(2000),
            completedAt: at(2100),
            error: null,
            // The completed attempt adds nothing: the row above describes it.
            attemptHistory: [
              entry(1, 'r1', 0, 100, 'failed', 'boom'),
              entry(2, 'r2', 1000, 1500, 'timed_out', 'timed out'),
            ],
          });
        });

        it('records a task that ends failed, a timed-out one as timed_out, and no attempt for a claim that gave up', async () => {
          const wf = fixture();
          const [failing, timing, givenUp] = [await wf.create(), await wf.create(), await wf.create()];
          const claimed = await wf.claim('r1', at(0));
          const of = (id: string) => claimed.find((c) => c.task.pipelineExecutionId === id)!;
          await wf.finish(of(failing.id), { status: 'failed', error: 'bad input' }, at(10));
          await wf.finish(of(timing.id), { status: 'failed', error: 'too slow', timedOut: true }, at(20));
          // A claim that gives up without running the code is no attempt.
          await wf.finish(of(givenUp.id), { status: 'failed', error: 'lease expired', ran: false }, at(30));
          expect((await store().listTasks(givenUp.id))[0]).toMatchObject({ status: 'failed', attemptHistory: null });
          expect((await store().listTasks(failing.id))[0]!.attemptHistory).toEqual([
            entry(1, 'r1', 0, 10, 'failed', 'bad input'),
          ]);
          expect((await store().listTasks(timing.id))[0]!.attemptHistory).toEqual([
            entry(1, 'r1', 0, 20, 'timed_out', 'too slow'),
          ]);
        });

        it('records an expired lease under the runner that lost it, and nothing for a task claimed ahead and never started', async () => {
          const wf = fixture();
          const [started, ahead] = [await wf.create({ now: at(1) }), await wf.create({ now: at(2) })];
          await wf.claim('r1', at(10), { startNow: 1 });
          const taken = await wf.claim('r2', at(10 + LEASE_MS + 1));
          const of = (id: string) => taken.find((c) => c.task.pipelineExecutionId === id)!.task;
          const lost = entry(1, 'r1', 10, 10 + LEASE_MS, 'lease_expired', 'lease expired (held by r1)');
          expect(of(started.id)).toMatchObject({ runnerId: 'r2', attemptHistory: [lost] });
          expect(of(ahead.id)).toMatchObject({ runnerId: 'r2', attemptHistory: null });
          expect((await store().listTasks(started.id))[0]!.attemptHistory).toEqual([lost]);
        });

        it('records a started attempt given back at shutdown as released, and nothing for one never started', async () => {
          const wf = fixture();
          const [started, ahead] = [await wf.create({ now: at(1) }), await wf.create({ now: at(2) })];
          const claimed = await wf.claim('r1', at(10), { startNow: 1 });
          expect(
            await store().releaseLeases(
              'r1',
              claimed.map((c) => leaseOfTask(c.task)),
              at(50),
            ),
          ).toBe(2);
          expect((await store().listTasks(started.id))[0]).toMatchObject({
            status: 'ready',
            attemptHistory: [entry(1, 'r1', 10, 50, 'released', null)],
          });
          expect((await store().listTasks(ahead.id))[0]).toMatchObject({ status: 'ready', attemptHistory: null });
        });
      });

      describe('finishTasks with one outcome', () => {
        it('completes a task with its output and readies a dependent whose last dependency ended', async () => {
          const wf = fixture(CHAIN);
          const pipeline = await wf.create();
          const [a] = await wf.claim('r1', at(10));
          const output = { set: { x: 1 }, deleted: ['y'] };
          expect(await wf.finish(a!, { status: 'completed', output }, at(20))).toEqual({
            accepted: true,
            readied: 1,
            finishedPipeline: null,
          });
          const [taskA, taskB] = await store().listTasks(pipeline.id);
          expect(taskA).toMatchObject({
            status: 'completed',
            output,
            error: null,
            completedAt: at(20),
            leaseOwner: null,
            leaseExpiresAt: null,
            attempt: 1,
            failedAttempts: 0,
          });
          expect(taskB).toMatchObject({ status: 'ready', pendingDeps: 0 });
          expect(await store().getPipeline(pipeline.id)).toMatchObject({
            status: 'running',
            remainingTasks: 1,
            failedTasks: 0,
          });
          const [b] = await wf.claim('r1', at(20));
          expect(b!.task.taskId).toBe('b');
        });

        it('readies a fan-in child only once both of its parents have ended', async () => {
          const wf = fixture(DIAMOND);
          const pipeline = await wf.create();
          const claimed = await wf.claim('r1', at(1));
          const [a, b] = ['a', 'b'].map((id) => claimed.find((c) => c.task.taskId === id)!);
          expect(await wf.finish(a!, completed(), at(2))).toMatchObject({ accepted: true, readied: 0 });
          expect((await store().listTasks(pipeline.id))[2]).toMatchObject({ status: 'not_started', pendingDeps: 1 });
          expect(await wf.claim('r1', at(2))).toEqual([]);
          expect(await wf.finish(b!, completed(), at(3))).toMatchObject({ accepted: true, readied: 1 });
          expect((await store().listTasks(pipeline.id))[2]).toMatchObject({ status: 'ready', pendingDeps: 0 });
        });

        it('ends the pipeline completed with its last task and returns it', async () => {
          const wf = fixture(CHAIN);
          const pipeline = await wf.create();
          const [a] = await wf.claim('r1', at(1));
          await wf.finish(a!, completed(), at(2));
          const [b] = await wf.claim('r1', at(3));
          const result = await wf.finish(b!, completed({ done: true }), at(4));
          expect(result).toMatchObject({ accepted: true, readied: 0 });
          expect(result.finishedPipeline).toMatchObject({
            id: pipeline.id,
            status: 'completed',
            remainingTasks: 0,
            failedTasks: 0,
            error: null,
            startedAt: at(1),
            completedAt: at(4),
          });
          expect(await store().getPipeline(pipeline.id)).toEqual(result.finishedPipeline);
        });

        it('counts a failed task, readies its dependents and ends the pipeline failed', async () => {
          const wf = fixture(DIAMOND);
          const pipeline = await wf.create();
          const claimed = await wf.claim('r1', at(1));
          const [a, b] = ['a', 'b'].map((id) => claimed.find((c) => c.task.taskId === id)!);
          expect(await wf.finish(a!, { status: 'failed', error: 'boom' }, at(2))).toEqual({
            accepted: true,
            readied: 0,
            finishedPipeline: null,
          });
          expect((await store().listTasks(pipeline.id))[0]).toMatchObject({
            status: 'failed',
            error: 'boom',
            failedAttempts: 1,
            output: null,
            completedAt: at(2),
            leaseOwner: null,
          });
          expect(await store().getPipeline(pipeline.id)).toMatchObject({
            status: 'running',
            remainingTasks: 2,
            failedTasks: 1,
          });
          expect(await wf.finish(b!, { status: 'skipped', reason: 'when() was false' }, at(3))).toMatchObject({
            readied: 1,
          });
          expect((await store().listTasks(pipeline.id))[1]).toMatchObject({
            status: 'skipped',
            failedAttempts: 0,
            completedAt: at(3),
          });
          const [c] = await wf.claim('r1', at(4));
          const result = await wf.finish(c!, { status: 'skipped', reason: 'trigger all_success not met' }, at(5));
          expect(result.finishedPipeline).toMatchObject({
            id: pipeline.id,
            status: 'failed',
            remainingTasks: 0,
            failedTasks: 1,
            completedAt: at(5),
          });
          expect(result.finishedPipeline!.error).toContain('boom');
        });

        it('ends a pipeline whose tasks were skipped as completed: a skip is not a failure', async () => {
          const wf = fixture();
          await wf.create();
          const [only] = await wf.claim('r1', at(1));
          const result = await wf.finish(only!, { status: 'skipped', reason: 'when() was false' }, at(2));
          expect(result.finishedPipeline).toMatchObject({ status: 'completed', failedTasks: 0, error: null });
        });

        it('puts a retried task back to ready at availableAt, counting the failed attempt only', async () => {
          const wf = fixture(CHAIN);
          const pipeline = await wf.create();
          const [a] = await wf.claim('r1', at(0));
          const outcome = { status: 'retry', error: 'flaky', availableAt: at(5000) } as const;
          expect(await wf.finish(a!, outcome, at(100))).toEqual({ accepted: true, readied: 0, finishedPipeline: null });
          const [taskA, taskB] = await store().listTasks(pipeline.id);
          expect(taskA).toMatchObject({
            status: 'ready',
            attempt: 1,
            failedAttempts: 1,
            error: 'flaky',
            availableAt: at(5000),
            leaseOwner: null,
            leaseExpiresAt: null,
            completedAt: null,
          });
          expect(taskB).toMatchObject({ status: 'not_started', pendingDeps: 1 });
          expect(await store().getPipeline(pipeline.id)).toMatchObject({ remainingTasks: 2, failedTasks: 0 });
          expect(await wf.claim('r1', at(4999))).toEqual([]);
          const [retried] = await wf.claim('r1', at(5000));
          expect(retried!.leaseExpired).toBe(false);
          expect(retried!.task).toMatchObject({ id: a!.task.id, attempt: 2, failedAttempts: 1 });
        });

        it('fences out another owner or a stale attempt and writes nothing', async () => {
          const wf = fixture(CHAIN);
          const pipeline = await wf.create();
          const [a] = await wf.claim('r1', at(0));
          const tasksBefore = await store().listTasks(pipeline.id);
          const pipelineBefore = await store().getPipeline(pipeline.id);
          const refused = { accepted: false, readied: 0, finishedPipeline: null };
          for (const fence of [{ runnerId: 'r2' }, { attempt: 2 }, { attempt: 0 }]) {
            expect(await wf.finish(a!, completed({ stale: true }), at(10), fence)).toEqual(refused);
            expect(await wf.finish(a!, { status: 'failed', error: 'stale' }, at(10), fence)).toEqual(refused);
          }
          expect(await store().listTasks(pipeline.id)).toEqual(tasksBefore);
          expect(await store().getPipeline(pipeline.id)).toEqual(pipelineBefore);
          expect((await wf.finish(a!, completed(), at(11))).accepted).toBe(true);
          expect(await wf.finish(a!, completed(), at(12))).toEqual(refused);
        });
      });

      describe('finishTasks with a batch', () => {
        it('commits outcomes of several pipelines together, results in input order, and refuses a stale owner inside the batch alone', async () => {
          const wf = fixture(CHAIN);
          const [one, two] = [await wf.create(), await wf.create()];
          const claimed = await wf.claim('r1', at(1));
          const [a1, a2] = [one, two].map((p) => claimed.find((c) => c.task.pipelineExecutionId === p.id)!);
          const twoBefore = await store().listTasks(two.id);
          const { finished: results, claimed: next } = await store().finishTasks([
            wf.request(a1!, completed({ n: 1 }), at(2)),
            wf.request(a2!, completed({ stale: true }), at(2), { runnerId: 'r2' }),
            wf.request(a2!, completed({ stale: true }), at(2), { attempt: a2!.task.attempt + 1 }),
          ]);
          expect(results).toEqual([
            { accepted: true, readied: 1, finishedPipeline: null },
            { accepted: false, readied: 0, finishedPipeline: null },
            { accepted: false, readied: 0, finishedPipeline: null },
          ]);
          expect((await store().listTasks(one.id)).map((t) => [t.status, t.output])).toEqual([
            ['completed', { set: { n: 1 }, deleted: [] }],
            ['ready', null],
          ]);
          expect(await store().listTasks(two.id)).toEqual(twoBefore);
          expect(await store().getPipeline(two.id)).toMatchObject({ status: 'running', remainingTasks: 2 });
          expect(next).toEqual([]);
          expect(await store().finishTasks([])).toEqual({ finished: [], claimed: [] });
        });

        it('readies a fan-in child exactly once when both of its parents finish in one batch', async () => {
          const wf = fixture(DIAMOND);
          const pipeline = await wf.create();
          const claimed = await wf.claim('r1', at(1));
          const [a, b] = ['a', 'b'].map((id) => claimed.find((c) => c.task.taskId === id)!);
          const { finished: results } = await store().finishTasks([
            wf.request(a!, completed({ a: 1 }), at(2)),
            wf.request(b!, completed({ b: 1 }), at(2)),
          ]);
          expect(results.map((r) => r.accepted)).toEqual([true, true]);
          expect(results.reduce((sum, r) => sum + r.readied, 0)).toBe(1);
          expect((await store().listTasks(pipeline.id))[2]).toMatchObject({ status: 'ready', pendingDeps: 0 });
          expect(await store().getPipeline(pipeline.id)).toMatchObject({ status: 'running', remainingTasks: 1 });
          const [c] = await wf.claim('r1', at(3));
          expect(c!.task.taskId).toBe('c');
          expect(await wf.claim('r1', at(3))).toEqual([]);
          const [last] = (await store().finishTasks([wf.request(c!, completed(), at(4))])).finished;
          expect(last!.finishedPipeline).toMatchObject({ id: pipeline.id, status: 'completed', remainingTasks: 0 });
        });

        it('ends a pipeline once when its last tasks finish in one batch, failed when one of them failed', async () => {
          const wf = fixture(DIAMOND);
          const pipeline = await wf.create();
          const claimed = await wf.claim('r1', at(1));
          const [a, b] = ['a', 'b'].map((id) => claimed.find((c) => c.task.taskId === id)!);
          await store().finishTasks([wf.request(a!, completed(), at(2)), wf.request(b!, completed(), at(2))]);
          const [c] = await wf.claim('r1', at(3));
          const other = await wf.create();
          const [otherA, otherB] = await wf.claim('r1', at(3));
          const { finished: results } = await store().finishTasks([
            wf.request(c!, { status: 'failed', error: 'boom' }, at(4)),
            wf.request(otherA!, { status: 'failed', error: 'first' }, at(4)),
            wf.request(otherB!, { status: 'failed', error: 'second' }, at(4)),
          ]);
          expect(results[0]!.finishedPipeline).toMatchObject({ id: pipeline.id, status: 'failed', failedTasks: 1 });
          expect(results[0]!.finishedPipeline!.error).toMatch(/^task c failed: boom/);
          expect(results.slice(1).map((r) => r.finishedPipeline)).toEqual([null, null]);
          expect(await store().getPipeline(other.id)).toMatchObject({
            status: 'running',
            remainingTasks: 1,
            failedTasks: 2,
            error: expect.stringMatching(/^task (a|b) failed: first/),
          });
        });
      });

      describe('finishTasks with a claim', () => {
        const claimOf = (wf: WorkflowFixture, now: Date, limit = 10) => ({
          runnerId: 'r1',
          registered: wf.registered,
          limit,
          leaseMs: LEASE_MS,
          now,
        });

        it('commits the outcomes, then claims in the same transaction, seeing the tasks they readied', async () => {
          const wf = fixture(CHAIN);
          const [one, two] = [await wf.create(), await wf.create()];
          const claimed = await wf.claim('r1', at(1), { limit: 1 });
          const [a1] = claimed;
          const { finished, claimed: next } = await store().finishTasks(
            [wf.request(a1!, completed({ n: 1 }), at(2)), wf.request(a1!, completed(), at(2), { runnerId: 'r2' })],
            { claim: claimOf(wf, at(2)) },
          );
          expect(finished).toEqual([
            { accepted: true, readied: 1, finishedPipeline: null },
            { accepted: false, readied: 0, finishedPipeline: null },
          ]);
          // The child the outcome readied, and the other pipeline's first task: leased to the claimer.
          const other = one.id === a1!.task.pipelineExecutionId ? two : one;
          expect(
            next.map((c) => [c.task.pipelineExecutionId, c.task.taskId, c.task.status, c.task.leaseOwner]).sort(),
          ).toEqual(
            [
              [a1!.task.pipelineExecutionId, 'b', 'running', 'r1'],
              [other.id, 'a', 'running', 'r1'],
            ].sort(),
          );
          const child = next.find((c) => c.task.taskId === 'b')!;
          expect(child.terminalTasks.map((t) => [t.taskId, t.output])).toEqual([['a', { set: { n: 1 }, deleted: [] }]]);
          expect(await wf.claim('r2', at(3))).toEqual([]);
        });

        it('readies a fan-in child once when both parents finish together, and claims it once', async () => {
          const wf = fixture(DIAMOND);
          const pipeline = await wf.create();
          const claimed = await wf.claim('r1', at(1));
          const [a, b] = ['a', 'b'].map((id) => claimed.find((c) => c.task.taskId === id)!);
          const { finished, claimed: next } = await store().finishTasks(
            [wf.request(a!, completed({ a: 1 }), at(2)), wf.request(b!, completed({ b: 1 }), at(2))],
            { claim: claimOf(wf, at(2)) },
          );
          expect(finished.map((r) => r.accepted)).toEqual([true, true]);
          expect(finished.reduce((sum, r) => sum + r.readied, 0)).toBe(1);
          expect(next.map((c) => [c.task.pipelineExecutionId, c.task.taskId, c.task.attempt])).toEqual([
            [pipeline.id, 'c', 1],
          ]);
          expect(await wf.claim('r2', at(3))).toEqual([]);
        });

        it('claims at most `limit` tasks, only claims with no outcome, and only finishes with no slot', async () => {
          const wf = fixture(CHAIN);
          for (let i = 0; i < 3; i += 1) await wf.create();
          const first = await store().finishTasks([], { claim: claimOf(wf, at(1), 2) });
          expect(first.finished).toEqual([]);
          expect(first.claimed).toHaveLength(2);
          const [a] = first.claimed;
          const { finished, claimed } = await store().finishTasks([wf.request(a!, completed(), at(2))], {
            claim: claimOf(wf, at(2), 0),
          });
          expect(finished).toEqual([{ accepted: true, readied: 1, finishedPipeline: null }]);
          expect(claimed).toEqual([]);
          expect(await wf.claim('r1', at(3))).toHaveLength(2);
        });

        it('writes nothing when an outcome is refused as a whole: the claim does not happen either', async () => {
          const wf = fixture(CHAIN);
          const pipeline = await wf.create();
          await wf.create();
          const [a] = await wf.claim('r1', at(1), { limit: 1 });
          const before = await store().listTasks(pipeline.id);
          await expect(
            store().finishTasks(
              [
                wf.request(a!, completed(), at(2)),
                { ...wf.request(a!, completed(), at(2)), taskExecutionId: 'not-a-uuid' },
              ],
              { claim: claimOf(wf, at(2)) },
            ),
          ).rejects.toBeInstanceOf(ValidationError);
          expect(await store().listTasks(pipeline.id)).toEqual(before);
          expect(await wf.claim('r1', at(3))).toHaveLength(1);
        });
      });

      describe('cancelPipeline', () => {
        it('cancels a pipeline and its unfinished tasks, keeping finished ones', async () => {
          const wf = fixture(DIAMOND);
          const pipeline = await wf.create();
          const claimed = await wf.claim('r1', at(0));
          const [a, b] = ['a', 'b'].map((id) => claimed.find((c) => c.task.taskId === id)!);
          await wf.finish(a!, completed({ a: 1 }), at(10));
          const cancelled = await store().cancelPipeline(pipeline.id, at(20));
          expect(cancelled).toMatchObject({
            id: pipeline.id,
            status: 'cancelled',
            remainingTasks: 0,
            completedAt: at(20),
          });
          expect(await store().getPipeline(pipeline.id)).toEqual(cancelled);
          const tasks = await store().listTasks(pipeline.id);
          expect(tasks.map((task) => [task.taskId, task.status, task.leaseOwner])).toEqual([
            ['a', 'completed', null],
            ['b', 'cancelled', null],
            ['c', 'cancelled', null],
          ]);
          expect(tasks[0]!.output).toEqual({ set: { a: 1 }, deleted: [] });
          expect((await wf.finish(b!, completed(), at(21))).accepted).toBe(false);
          expect(await wf.claim('r1', at(5000))).toEqual([]);
          expect(await store().cancelPipeline(pipeline.id, at(30))).toEqual(cancelled);
          expect(await store().cancelPipeline(newId(), at(30))).toBeNull();
        });

        it('leaves a pipeline that already ended as it is', async () => {
          const wf = fixture();
          const pipeline = await wf.create();
          const [finished] = await wf.runAll(at(1));
          expect(finished).toMatchObject({ id: pipeline.id, status: 'completed' });
          expect(await store().cancelPipeline(pipeline.id, at(2))).toEqual(finished);
          expect((await store().listTasks(pipeline.id))[0]!.status).toBe('completed');
        });
      });

      describe('pausePipeline and resumePipeline', () => {
        it('pauses a running pipeline, requeues its running tasks without a failure, and resumes it', async () => {
          const wf = fixture(DIAMOND);
          const pipeline = await wf.create();
          const claimed = await wf.claim('r1', at(0));
          const paused = await store().pausePipeline(pipeline.id, 'maintenance', at(10));
          expect(paused).toMatchObject({ id: pipeline.id, status: 'paused', pauseReason: 'maintenance' });
          expect(await store().getPipeline(pipeline.id)).toEqual(paused);
          expect((await store().listTasks(pipeline.id)).map((task) => [task.status, task.leaseOwner])).toEqual([
            ['ready', null],
            ['ready', null],
            ['not_started', null],
          ]);
          expect(await wf.claim('r1', at(20))).toEqual([]);
          expect((await wf.finish(claimed[0]!, completed(), at(21))).accepted).toBe(false);
          const resumed = await store().resumePipeline(pipeline.id, at(30));
          expect(resumed).toMatchObject({ status: 'running', pauseReason: null, startedAt: at(0) });
          const again = await wf.claim('r2', at(30));
          expect(
            again.map((c) => [c.task.taskId, c.task.attempt, c.task.failedAttempts, c.leaseExpired]).sort(),
          ).toEqual([
            ['a', 2, 0, false],
            ['b', 2, 0, false],
          ]);
        });

        it('pauses a pipeline that has not started and resumes it as pending', async () => {
          const wf = fixture();
          const pipeline = await wf.create();
          expect(await store().pausePipeline(pipeline.id, null, at(1))).toMatchObject({
            status: 'paused',
            pauseReason: null,
          });
          expect(await store().resumePipeline(pipeline.id, at(2))).toMatchObject({
            status: 'pending',
            startedAt: null,
          });
          expect(await wf.claim('r1', at(3))).toHaveLength(1);
        });

        it('returns null for an unknown pipeline and leaves pipelines it cannot pause or resume as they are', async () => {
          const wf = fixture();
          const running = await wf.create();
          await wf.claim('r1', at(1));
          const current = await store().getPipeline(running.id);
          expect(await store().resumePipeline(running.id, at(2))).toEqual(current);
          const cancelled = await store().cancelPipeline((await wf.create()).id, at(3));
          expect(await store().pausePipeline(cancelled!.id, 'late', at(4))).toEqual(cancelled);
          expect(await store().pausePipeline(newId(), null, at(5))).toBeNull();
          expect(await store().resumePipeline(newId(), at(5))).toBeNull();
        });
      });
    });

    describe('whole tables', () => {
      const storage = useStorage(open, 'each');
      const store = () => storage().executions;
      const fixture = (dag = SINGLE) => workflowFixture(storage, dag);

      it('lists the pipelines of every workflow newest first, filtered by status alone', async () => {
        const first = await fixture().create({ now: at(1) });
        const second = await fixture().create({ now: at(2) });
        const third = await fixture().create({ now: at(3) });
        await store().cancelPipeline(second.id, at(4));
        const ids = (rows: Array<{ id: string }>) => rows.map((row) => row.id);
        expect(ids(await store().listPipelines({ limit: 10, offset: 0 }))).toEqual([third.id, second.id, first.id]);
        expect(ids(await store().listPipelines({ status: 'pending', limit: 10, offset: 0 }))).toEqual([
          third.id,
          first.id,
        ]);
        expect(ids(await store().listPipelines({ limit: 1, offset: 2 }))).toEqual([first.id]);
      });

      it('counts running tasks whose lease expired, not live leases, ready or finished tasks', async () => {
        const stalled = fixture(CHAIN);
        await stalled.create();
        await stalled.claim('r1', at(0));
        const live = fixture();
        await live.create();
        await live.claim('r2', at(500));
        const finished = fixture();
        await finished.create();
        await finished.runAll(at(0), completed());
        await fixture(DIAMOND).create();

        expect(await store().countStalledTasks(at(1000))).toBe(0);
        expect(await store().countStalledTasks(at(1001))).toBe(1);
        expect(await store().countStalledTasks(at(1501))).toBe(2);
        await stalled.claim('r3', at(1600));
        expect(await store().countStalledTasks(at(1600))).toBe(1);
      });

      it('deletes terminal pipelines that ended before the cutoff, with their tasks, a batch at a time', async () => {
        const endedWith = async (dag = SINGLE, outcome = completed(), endedAt = at(100)) => {
          const wf = fixture(dag);
          const pipeline = await wf.create();
          await wf.runAll(endedAt, outcome);
          return pipeline;
        };
        const completedOld = await endedWith();
        const failedOld = await endedWith(CHAIN, { status: 'failed', error: 'boom' }, at(200));
        const cancelledOld = await fixture(DIAMOND).create();
        await store().cancelPipeline(cancelledOld.id, at(300));
        const atCutoff = await fixture().create();
        await store().cancelPipeline(atCutoff.id, at(1000));
        const recent = await endedWith(SINGLE, completed(), at(2000));
        const running = await fixture().create();
        await store().claimTasks({
          runnerId: 'r1',
          registered: [{ workflowName: running.workflowName, taskIds: ['only'] }],
          limit: 1,
          leaseMs: 1000,
          now: at(0),
        });
        const paused = await fixture().create();
        await store().pausePipeline(paused.id, null, at(0));
        const pending = await fixture(CHAIN).create();

        expect(await store().deleteTerminalPipelines(at(1000), 2)).toBe(2);
        expect(await store().deleteTerminalPipelines(at(1000), 2)).toBe(1);
        expect(await store().deleteTerminalPipelines(at(1000), 2)).toBe(0);
        for (const gone of [completedOld, failedOld, cancelledOld]) {
          expect(await store().getPipeline(gone.id)).toBeNull();
          expect(await store().listTasks(gone.id)).toEqual([]);
        }
        for (const kept of [atCutoff, recent, running, paused, pending]) {
          expect(await store().getPipeline(kept.id)).not.toBeNull();
          expect((await store().listTasks(kept.id)).length).toBeGreaterThan(0);
        }
        expect(await store().listPipelines({ limit: 10, offset: 0 })).toHaveLength(5);
      });
    });
  });
}
