import { type DefaultRunner, defineWorkflow, type PipelineExecution } from '@orreryjs/runner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboard, type Dashboard } from '../src/index.js';
import { BACKENDS, createRunner, HOSTILE_NAME, waitFor } from './support.js';

// biome-ignore lint/suspicious/noExplicitAny: the API's JSON bodies, read field by field
type Loose = any;

const ORIGIN = 'http://dashboard.test';
const RUN_AT = new Date('2099-01-01T00:00:00Z');
const ACME_GROUP = 'sync/customer=acme';

/**
 * What operators are told of flow control: a real runner holds one pipeline of each customer
 * active behind a gate and queues the rest; the pages and the API say why each waits and how
 * full each group is.
 */
describe.each(BACKENDS)('dashboard flow control on $name', (backend) => {
  let db: ReturnType<(typeof BACKENDS)[number]['open']>;
  let runner: DefaultRunner;
  let dashboard: Dashboard;
  let release: () => void = () => {};
  const started: PipelineExecution[] = [];
  let acme: PipelineExecution[] = [];
  let later: PipelineExecution;

  const text = async (path: string) => (await dashboard.fetch(new Request(`${ORIGIN}${path}`))).text();
  const json = async (path: string): Promise<Loose> => (await dashboard.fetch(new Request(`${ORIGIN}${path}`))).json();

  beforeAll(async () => {
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const sync = defineWorkflow({
      name: 'sync',
      priority: 3,
      concurrency: { key: 'customer', limit: 1 },
      tasks: [{ id: 'pull', run: () => held }],
    });
    const report = defineWorkflow({ name: 'report', tasks: [{ id: 'build', run: () => {} }] });
    db = backend.open();
    runner = await createRunner(db.config, {
      enableCronScheduling: false,
      pollIntervalMs: 20,
      workflows: [sync, report],
    });
    await runner.start();
    for (let n = 0; n < 3; n += 1) acme.push(await runner.executeAsync('sync', { customer: 'acme' }));
    for (let n = 0; n < 2; n += 1) started.push(await runner.executeAsync('sync', { customer: HOSTILE_NAME }));
    later = await runner.executeAsync('report', {}, { runAt: RUN_AT });
    started.push(...acme, later);
    await waitFor(async () => (await runner.listExecutions({ status: 'running' })).length === 2);
    dashboard = createDashboard({ client: runner });
  });

  afterAll(async () => {
    release();
    await Promise.all(started.filter((e) => e !== later).map((e) => e.wait()));
    await runner?.shutdown();
    await db?.remove();
    acme = [];
    started.length = 0;
  });

  it('says on the executions list why each pending pipeline waits, escaped', async () => {
    const page = await text('/executions');
    expect(page.split(`waiting for ${ACME_GROUP} (1/1 active)`)).toHaveLength(3);
    expect(page).toContain('starts at 2099-01-01 00:00:00 UTC');
    expect(page).toContain('waiting for sync/customer=&lt;script&gt;alert(1)&lt;/script&gt; (1/1 active)');
    expect(page).not.toContain('<script>alert(1)');
  });

  it("shows a pending execution's priority and what it waits for on its page and in the API", async () => {
    const queued = acme[2]!.id;
    const page = await text(`/executions/${queued}`);
    expect(page).toContain(`<dt>Waiting</dt><dd data-waiting>waiting for ${ACME_GROUP} (1/1 active)</dd>`);
    expect(page).toContain('<dt>Priority</dt><dd data-priority>3</dd>');
    expect(await text(`/executions/${later.id}`)).toContain('starts at 2099-01-01 00:00:00 UTC');
    const detail = await json(`/api/executions/${queued}`);
    expect(detail).toMatchObject({
      executionId: queued,
      status: 'pending',
      priority: 3,
      runAt: null,
      waitingFor: { kind: 'concurrency', group: ACME_GROUP, active: 1, limit: 1 },
    });
    expect(detail.tasks.map((t: Loose) => t.taskId)).toEqual(['pull']);
    expect((await json(`/api/executions/${later.id}`)).waitingFor).toEqual({
      kind: 'runAt',
      runAt: RUN_AT.toISOString(),
    });
    const listed = await json('/api/executions?workflow=sync&status=pending');
    expect(listed.items.map((e: Loose) => e.waitingFor.group).sort()).toEqual(
      [ACME_GROUP, ACME_GROUP, `sync/customer=${HOSTILE_NAME}`].sort(),
    );
  });

  it("shows a workflow's rules and priority, and its groups' occupancy", async () => {
    const page = await text('/workflows');
    const sync = page.slice(page.indexOf('data-workflow="sync"'));
    expect(sync).toContain('<dd data-priority>3</dd>');
    expect(sync).toContain('<dd data-concurrency>1 at a time per customer</dd>');
    const fromRow = sync.slice(sync.indexOf(`<tr data-group="${ACME_GROUP}">`));
    const acmeRow = fromRow.slice(0, fromRow.indexOf('</tr>'));
    expect(acmeRow).toContain('<div data-active>1 / 1</div>');
    expect(acmeRow).toContain('<div data-queued>2</div>');
    expect(sync).toContain('data-group="sync/customer=&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(page).not.toContain('<script>alert(1)');
    const report = page.slice(page.indexOf('data-workflow="report"'), page.indexOf('data-workflow="sync"'));
    expect(report).toContain('<dd data-priority>0</dd>');
    expect(report).toContain('no limit');
    expect(report).not.toContain('Concurrency groups');
    expect(await json('/api/workflows/sync/groups')).toEqual([
      // By group name: '<' sorts before 'a'.
      { group: `sync/customer=${HOSTILE_NAME}`, workflowName: 'sync', active: 1, queued: 1, limit: 1 },
      { group: ACME_GROUP, workflowName: 'sync', active: 1, queued: 2, limit: 1 },
    ]);
    expect(await json('/api/workflows/report/groups')).toEqual([]);
    const workflows = await json('/api/workflows');
    expect(workflows.find((w: Loose) => w.name === 'sync')).toMatchObject({
      priority: 3,
      concurrency: [{ key: 'customer', limit: 1, onLimit: 'queue' }],
    });
  });
});
