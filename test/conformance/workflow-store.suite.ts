import { defineWorkflow, type WorkflowDefinitionRow, workflowDefinitionRow } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { at, type OpenStorage, uniqueName, useStorage } from './fixtures.js';

/** A stored definition of a two-task workflow; `variant` changes its structure, hence its version. */
function definition(name: string, variant = 0): WorkflowDefinitionRow {
  return workflowDefinitionRow(
    defineWorkflow({
      name,
      description: `the ${name} workflow`,
      tasks: [
        { id: 'extract', run: () => undefined, retry: { maxAttempts: 5 + variant, retryOn: () => true } },
        { id: 'load', dependsOn: ['extract'], trigger: 'all_done', timeoutMs: 1000, when: () => true, run: () => {} },
      ],
    }),
  );
}

/** WorkflowStore behaviour: the `workflows` table, one row per (name, version). */
export function describeWorkflowStore(open: OpenStorage): void {
  describe('WorkflowStore', () => {
    const storage = useStorage(open, 'all');
    const store = () => storage().workflows;
    const stored = async (name: string) => (await store().listWorkflows()).filter((row) => row.name === name);

    it('stores a definition whole: tasks, retry without retryOn, timeouts, guards, description', async () => {
      const name = uniqueName();
      await store().upsertWorkflows([definition(name)], at(0));
      const [row] = await stored(name);
      expect(row).toEqual({ ...definition(name), registeredAt: at(0), lastSeenAt: at(0) });
      expect(row!.tasks).toEqual([
        {
          id: 'extract',
          dependsOn: [],
          trigger: 'all_success',
          retry: { maxAttempts: 5, backoff: 'exponential', initialDelayMs: 1000, maxDelayMs: 60_000, jitter: true },
          timeoutMs: null,
          hasWhen: false,
        },
        {
          id: 'load',
          dependsOn: ['extract'],
          trigger: 'all_done',
          retry: { maxAttempts: 3, backoff: 'exponential', initialDelayMs: 1000, maxDelayMs: 60_000, jitter: true },
          timeoutMs: 1000,
          hasWhen: true,
        },
      ]);
    });

    it('keeps registeredAt on a second upsert and moves lastSeenAt forward, never back', async () => {
      const name = uniqueName();
      await store().upsertWorkflows([definition(name)], at(0));
      await store().upsertWorkflows([{ ...definition(name), description: 'renamed' }], at(5000));
      await store().upsertWorkflows([definition(name)], at(1000));
      expect(await stored(name)).toEqual([{ ...definition(name), registeredAt: at(0), lastSeenAt: at(5000) }]);
    });

    it('keeps one row per version and returns the latest registered one by name', async () => {
      const name = uniqueName();
      const [v1, v2] = [definition(name, 0), definition(name, 1)];
      expect(v1.version).not.toBe(v2.version);
      await store().upsertWorkflows([v1], at(0));
      await store().upsertWorkflows([v2], at(10));
      await store().upsertWorkflows([v1], at(20)); // an old runner restarting does not make v1 the latest
      expect((await stored(name)).map((row) => row.version)).toEqual([v1.version, v2.version]);
      expect(await store().getLatestWorkflow(name)).toEqual({ ...v2, registeredAt: at(10), lastSeenAt: at(10) });
    });

    it('upserts several workflows in one call and lists them by name', async () => {
      const [a, b] = [uniqueName('a'), uniqueName('b')];
      await store().upsertWorkflows([definition(b), definition(a)], at(0));
      const names = (await store().listWorkflows()).map((row) => row.name);
      expect(names.indexOf(a)).toBeGreaterThanOrEqual(0);
      expect(names.indexOf(a)).toBeLessThan(names.indexOf(b));
      await store().upsertWorkflows([], at(0));
    });

    it('returns null for a name never registered', async () => {
      expect(await store().getLatestWorkflow(uniqueName('missing'))).toBeNull();
    });
  });
}
