import { defineWorkflow, type Storage, WorkflowNotFoundError } from '@orreryjs/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempSqliteStorage } from '../../../test/support/sqlite.js';
import { KnownWorkflows, LATEST_VERSION_CACHE_MS } from '../src/known-workflows.js';
import { WorkflowRegistry } from '../src/registry.js';

const noop = async () => undefined;
const local = defineWorkflow({ name: 'local', tasks: [{ id: 'a', run: noop }] });

/** A registry holding `workflows`, as a runner's. */
function registryOf(...workflows: ReturnType<typeof defineWorkflow>[]): WorkflowRegistry {
  const registry = new WorkflowRegistry();
  for (const workflow of workflows) registry.add(workflow);
  return registry;
}

describe('KnownWorkflows', () => {
  let storage: Storage;
  let remove: () => Promise<void>;

  beforeEach(async () => {
    ({ storage, remove } = await tempSqliteStorage());
  });
  afterEach(() => remove());

  /** Another runner registers `workflows` (a second later than the last): their definitions land in the table. */
  let registeredAtMs = Date.parse('2026-01-01T00:00:00Z');
  const storedElsewhere = (...workflows: ReturnType<typeof defineWorkflow>[]) => {
    registeredAtMs += 1000;
    return storage.workflows.upsertWorkflows(registryOf(...workflows).definitions(), new Date(registeredAtMs));
  };

  it('starts the registered workflow, not a version stored by another runner under its name', async () => {
    await storedElsewhere(defineWorkflow({ name: 'local', tasks: [{ id: 'z', run: noop }] }));
    const known = new KnownWorkflows(registryOf(local), storage.workflows);
    const resolved = await known.resolve('local');
    expect(resolved).toBe(local);
  });

  it('starts a name only another runner registered at its latest stored version, whose tasks carry no code here', async () => {
    await storedElsewhere(defineWorkflow({ name: 'remote', tasks: [{ id: 'x', run: noop }] }));
    const latest = defineWorkflow({
      name: 'remote',
      tasks: [
        { id: 'x', run: noop },
        { id: 'y', dependsOn: ['x'], run: noop },
      ],
    });
    await storedElsewhere(latest);
    const known = new KnownWorkflows(registryOf(local), storage.workflows);
    const resolved = await known.resolve('remote');
    expect(resolved.version).toBe(latest.version);
    expect(resolved.tasks.map((task) => [task.id, task.dependsOn ?? []])).toEqual([
      ['x', []],
      ['y', ['x']],
    ]);
    // What this process claims stays its registry: the cron tick must not take the remote workflow's schedules.
    expect(known.names()).toEqual(['local']);
  });

  it(`reads the latest stored version again once ${LATEST_VERSION_CACHE_MS} ms have passed, not on every start`, async () => {
    const first = defineWorkflow({ name: 'remote', tasks: [{ id: 'x', run: noop }] });
    const second = defineWorkflow({ name: 'remote', tasks: [{ id: 'x', retry: { maxAttempts: 2 }, run: noop }] });
    expect(second.version).not.toBe(first.version);
    await storedElsewhere(first);
    const known = new KnownWorkflows(new WorkflowRegistry(), storage.workflows);
    expect((await known.resolve('remote')).version).toBe(first.version);
    await storedElsewhere(second);
    expect((await known.resolve('remote')).version).toBe(first.version);
    await new Promise((resolve) => setTimeout(resolve, LATEST_VERSION_CACHE_MS + 50));
    expect((await known.resolve('remote')).version).toBe(second.version);
  });

  it('answers has() for a stored name only after a refresh, and refresh() lists every known name once', async () => {
    const known = new KnownWorkflows(registryOf(local), storage.workflows);
    await storedElsewhere(defineWorkflow({ name: 'remote', tasks: [{ id: 'x', run: noop }] }), local);
    expect(known.has('local')).toBe(true);
    expect(known.has('remote')).toBe(false);
    expect(await known.refresh()).toEqual(['local', 'remote']);
    expect(known.has('remote')).toBe(true);
  });

  it('refuses an unknown name with WorkflowNotFoundError listing the known ones', async () => {
    await storedElsewhere(defineWorkflow({ name: 'remote', tasks: [{ id: 'x', run: noop }] }));
    const known = new KnownWorkflows(registryOf(local), storage.workflows);
    await expect(known.resolve('missing')).rejects.toThrow(WorkflowNotFoundError);
    await expect(known.assertKnown('missing')).rejects.toThrow(/"missing" is not registered.*known: local, remote/);
    await expect(known.assertKnown(42)).rejects.toThrow(/42 is not registered/);
    await expect(known.assertKnown('remote')).resolves.toBeUndefined();
  });

  it('says no runner has registered any workflow yet on an empty database', async () => {
    const known = new KnownWorkflows(new WorkflowRegistry(), storage.workflows);
    await expect(known.resolve('anything')).rejects.toThrow(/no runner has registered any workflow yet/);
  });
});
