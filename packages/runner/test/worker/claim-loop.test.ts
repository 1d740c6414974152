import { type ClaimedTask, defineWorkflow, type Storage, silentLogger, systemClock } from '@orreryjs/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkflowRegistry } from '../../src/registry.js';
import { ActiveTasks } from '../../src/worker/active-tasks.js';
import { ClaimLoop } from '../../src/worker/claim-loop.js';
import { ClaimedAhead } from '../../src/worker/claimed-ahead.js';
import { ADAPTERS, type TestDatabase, waitFor } from '../support.js';
import { completion, diamond, nextTurn, REGISTERED, recording, T0, WORKFLOW } from './outcomes.js';

const noop = async () => undefined;

/** A registry holding the diamond workflow (outcomes.ts): a and b, then c. */
function diamondRegistry(): WorkflowRegistry {
  const registry = new WorkflowRegistry();
  registry.add(
    defineWorkflow({
      name: WORKFLOW,
      tasks: [
        { id: 'a', run: noop },
        { id: 'b', run: noop },
        { id: 'c', dependsOn: ['a', 'b'], run: noop },
      ],
    }),
  );
  return registry;
}

describe.each(ADAPTERS)('ClaimLoop on $name', (adapter) => {
  let db: TestDatabase;
  let storage: Storage;
  let loop: ClaimLoop | undefined;

  beforeEach(async () => {
    db = adapter.open();
    storage = await db.storage();
  });
  afterEach(async () => {
    await loop?.stop();
    loop = undefined;
    await storage.close();
    await db.remove();
  });

  /**
   * A claim loop over the recorded store whose started attempts are only recorded (their code
   * never runs, so they take no slot): the test commits their outcomes itself.
   */
  const claimLoop = (maxConcurrentTasks: number, outrunPauseMs?: number) => {
    const recorded = recording(storage.executions);
    const registry = diamondRegistry();
    const started: ClaimedTask[] = [];
    loop = new ClaimLoop({
      store: recorded.store,
      registry,
      active: new ActiveTasks(),
      ahead: new ClaimedAhead(),
      startAttempt: (claimed) => void started.push(claimed),
      runnerId: 'r1',
      maxConcurrentTasks,
      taskLeaseMs: 60_000,
      pollIntervalMs: 60_000,
      ...(outrunPauseMs !== undefined && { outrunPauseMs }),
      clock: systemClock,
      logger: silentLogger,
    });
    return { loop, started, ...recorded };
  };

  it('commits outcomes ending in one turn together, and those ending while a commit is in flight together', async () => {
    await storage.executions.createPipelines(Array.from({ length: 20 }, diamond));
    const claimed = await storage.executions.claimTasks({
      runnerId: 'r1',
      registered: REGISTERED,
      limit: 100,
      leaseMs: 60_000,
      now: T0,
    });
    // Not started: nothing rides along, so each write holds outcomes only.
    const { loop, batches } = claimLoop(10);
    const lone = loop.commit(completion(claimed[0]!, { n: 0 }));
    await nextTurn();
    const rest = claimed.slice(1).map((c, n) => loop.commit(completion(c, { n: n + 1 })));
    const results = await Promise.all([lone, ...rest]);
    expect(results.every((r) => r.accepted)).toBe(true);
    expect(batches()).toEqual([1, 39]);
  });

  it('rides along while work keeps coming as tasks finish, and goes idle once a claim along finds none', async () => {
    const { loop, started, writes, claims } = claimLoop(10);
    await storage.executions.createPipeline(diamond());
    // Its first tick claims at once.
    loop.start();
    await waitFor(() => started.length === 2);
    // Two of ten slots filled: not saturated, and work may keep coming.
    expect(loop.mode).toBe('ridingAlong');
    await Promise.all(started.map((c) => loop.commit(completion(c))));
    // The outcomes' transaction leased c, which their commit readied.
    await waitFor(() => started.length === 3);
    expect(started[2]!.task.taskId).toBe('c');
    expect(writes).toEqual([{ outcomes: 2, withClaim: true }]);
    await loop.commit(completion(started[2]!));
    // The claim along with c's outcome found nothing: the loop waits for a nudge or the poll.
    expect(writes).toEqual([
      { outcomes: 2, withClaim: true },
      { outcomes: 1, withClaim: true },
    ]);
    expect(loop.mode).toBe('idle');
    // One claim of its own (the first tick); the others rode along.
    expect(claims).toEqual([10]);
  });

  it('when idle, takes the claim along with an outcome that may ready its dependents, and only then', async () => {
    const { loop, started, writes, claims } = claimLoop(10);
    await storage.executions.createPipeline(diamond());
    loop.start();
    await waitFor(() => started.length === 2);
    // a's claim along finds nothing (c waits for b too): idle.
    await loop.commit(completion(started[0]!));
    expect(loop.mode).toBe('idle');
    // Idle, b's outcome may ready c: the claim rides along and leases c with b's commit.
    await loop.commit(completion(started[1]!));
    expect(started.map((c) => c.task.taskId)).toEqual(['a', 'b', 'c']);
    expect(loop.mode).toBe('ridingAlong');
    await loop.commit(completion(started[2]!));
    expect(loop.mode).toBe('idle');
    // Idle, an outcome that readies nothing commits alone.
    await storage.executions.createPipeline(diamond());
    loop.nudge();
    await waitFor(() => started.length === 5);
    await loop.commit({ ...completion(started[3]!), dependents: [] });
    expect(writes).toEqual([
      { outcomes: 1, withClaim: true },
      { outcomes: 1, withClaim: true },
      { outcomes: 1, withClaim: true },
      { outcomes: 1, withClaim: false },
    ]);
    // Two claims of its own (the first tick, the nudge); c's rode along.
    expect(claims).toEqual([10, 10]);
  });

  it('when idle, leaves the claim to a queued write that may ready dependents, rather than take its slots first', async () => {
    const recorded = recording(storage.executions);
    let instant = false;
    const claimTasks = recorded.store.claimTasks;
    // A wake-up arriving while the claim is in flight (as a signal's does), so the loop ticks again at once.
    recorded.store.claimTasks = (request) => {
      if (instant) loop!.nudge();
      return claimTasks(request);
    };
    const registry = diamondRegistry();
    const started: ClaimedTask[] = [];
    const committed: Array<Promise<unknown>> = [];
    loop = new ClaimLoop({
      store: recorded.store,
      registry,
      active: new ActiveTasks(),
      ahead: new ClaimedAhead(),
      // Instant tasks (a signalled wait task): the outcome is queued as the claim hands the task out.
      startAttempt: (claimed) => {
        started.push(claimed);
        if (instant) committed.push(loop!.commit(completion(claimed)));
      },
      runnerId: 'r1',
      maxConcurrentTasks: 10,
      taskLeaseMs: 60_000,
      pollIntervalMs: 60_000,
      clock: systemClock,
      logger: silentLogger,
    });
    await storage.executions.createPipeline(diamond());
    loop.start();
    await waitFor(() => started.length === 2);
    await loop.commit(completion(started[0]!));
    expect(loop.mode).toBe('idle');
    instant = true;
    await storage.executions.createPipeline(diamond());
    loop.nudge();
    await waitFor(() => started.length === 5);
    await Promise.all(committed);
    // The new a and b committed together and leased their c; the tick after their claim claimed nothing.
    expect(started.slice(2).map((c) => c.task.taskId)).toEqual(['a', 'b', 'c']);
    expect(recorded.writes.slice(1, 2)).toEqual([{ outcomes: 2, withClaim: true }]);
    expect(recorded.claims).toEqual([10, 10]);
  });

  it('is saturated when a claim fills every free slot: it then commits outcomes alone and claims on its own', async () => {
    const { loop, started, writes, claims } = claimLoop(2);
    await storage.executions.createPipelines([diamond(), diamond(), diamond()]);
    loop.start();
    await waitFor(() => started.length === 2);
    expect(loop.mode).toBe('saturated');
    await Promise.all(started.slice(0, 2).map((c) => loop.commit(completion(c))));
    expect(writes).toEqual([{ outcomes: 2, withClaim: false }]);
    // A freed slot of a saturated worker claims at once, on its own.
    loop.slotFreed();
    await waitFor(() => claims.length === 2);
    expect(writes).toHaveLength(1);
  });

  it('after a wake-up its claim finds nothing (a quicker runner took the work), answers the next ones once the pause is over, once', async () => {
    // Long enough that the steps below, a pipeline written included, end well within it on a loaded machine.
    const { loop, started, claims, claimsSettled } = claimLoop(10, 3_000);
    loop.start();
    // Each step starts once the claim before it has returned: one still in flight would take the wake-up as a nudge.
    await waitFor(() => claimsSettled() === 1);
    // Another process's wake-up for work this loop's claim finds: answered at once, within these turns.
    await storage.executions.createPipeline(diamond());
    loop.wakeUp(Date.now());
    for (let turn = 0; turn < 3; turn += 1) await nextTurn();
    expect(claims).toHaveLength(2);
    await waitFor(() => started.length === 2);
    // A wake-up whose work another runner took: the claim finds nothing.
    loop.wakeUp(Date.now());
    await waitFor(() => claimsSettled() === 3);
    await nextTurn();
    // Work for the next wake-up waits for the pause: the same turns pass without a claim.
    await storage.executions.createPipeline(diamond());
    loop.wakeUp(Date.now());
    loop.wakeUp(Date.now());
    for (let turn = 0; turn < 3; turn += 1) await nextTurn();
    expect(claims).toHaveLength(3);
    // Then one claim answers both.
    await waitFor(() => started.length === 4);
    expect(claims).toHaveLength(4);
    // It found work: the next wake-up is answered at once again.
    await storage.executions.createPipeline(diamond());
    loop.wakeUp(Date.now());
    for (let turn = 0; turn < 3; turn += 1) await nextTurn();
    expect(claims).toHaveLength(5);
    await waitFor(() => started.length === 6);
  });

  it('takes a wake-up as answered by the claim along with outcomes sent after it, so a later claim finding nothing is no race lost', async () => {
    const { loop, started, claims, writes } = claimLoop(10, 60_000);
    loop.start();
    await waitFor(() => claims.length === 1);
    await storage.executions.createPipeline(diamond());
    loop.nudge();
    await waitFor(() => started.length === 2);
    // a and b end together as another process's wake-up comes: their write's claim along answers it, and finds c.
    const committed = started.map((c) => loop.commit(completion(c)));
    loop.wakeUp(Date.now());
    await Promise.all(committed);
    await waitFor(() => started.length === 3);
    expect(claims).toHaveLength(2);
    expect(writes).toEqual([{ outcomes: 2, withClaim: true }]);
    await loop.commit(completion(started[2]!));
    // A claim of its own that finds nothing answers no wake-up.
    loop.nudge();
    await waitFor(() => claims.length === 3);
    await nextTurn();
    // So the next wake-up is answered at once.
    await storage.executions.createPipeline(diamond());
    loop.wakeUp(Date.now());
    for (let turn = 0; turn < 3; turn += 1) await nextTurn();
    expect(claims).toHaveLength(4);
    await waitFor(() => started.length === 5);
  });
});
