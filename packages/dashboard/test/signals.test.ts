import { randomUUID } from 'node:crypto';
import { type DefaultRunner, defineWorkflow, type PipelineExecution } from '@orreryjs/runner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatInstant } from '../src/format.js';
import { createDashboard, type Dashboard } from '../src/index.js';
import { BACKENDS, createRunner, csrfOf, HOSTILE_NAME, ORIGIN, order, post, waitFor } from './support.js';

// biome-ignore lint/suspicious/noExplicitAny: the API's JSON bodies, read field by field
type Loose = any;

// A wait with no timeout, for a signal whose name would run script if the pages did not escape it.
const hostile = defineWorkflow({ name: 'hostile', tasks: [{ id: 'gate', waitFor: { signal: HOSTILE_NAME } }] });

/**
 * Wait tasks on the dashboard: a real runner holds executions at their waits; the execution
 * page says what each waits for and until when and offers the Signal form, and
 * `POST api/executions/:id/signal` sends the signal under the same protections as every action.
 */
describe.each(BACKENDS)('dashboard signals on $name', (backend) => {
  let db: ReturnType<(typeof BACKENDS)[number]['open']>;
  let runner: DefaultRunner;
  let dashboard: Dashboard;
  let csrf: string;
  let waiting: PipelineExecution;
  let unsafe: PipelineExecution;
  let deadline: Date;

  const text = async (board: Dashboard, path: string) => (await board.fetch(new Request(`${ORIGIN}${path}`))).text();
  const signal = (id: string, body: unknown, headers: Record<string, string> = { 'X-Orrery-Csrf': csrf }) =>
    post(dashboard, `/api/executions/${id}/signal`, body, headers);
  /** The approval task's status and deadline: what a refused request must leave as it was. */
  const approvalTask = async () =>
    (await runner.getExecutionResult(waiting.id)).tasks.find((task) => task.taskId === 'approval')!;

  beforeAll(async () => {
    db = backend.open();
    runner = await createRunner(db.config, {
      enableCronScheduling: false,
      pollIntervalMs: 20,
      workflows: [order, hostile],
    });
    await runner.start();
    waiting = await runner.executeAsync('order');
    unsafe = await runner.executeAsync('hostile');
    await waitFor(async () => (await approvalTask()).waitsUntil !== undefined);
    deadline = (await approvalTask()).waitsUntil!;
    dashboard = createDashboard({ client: runner });
    csrf = await csrfOf(dashboard);
  });

  afterAll(async () => {
    await runner?.shutdown();
    await db?.remove();
  });

  it('shows a waiting task with its signal, its deadline and the Signal form, the name prefilled', async () => {
    const page = await text(dashboard, `/executions/${waiting.id}`);
    const section = page.slice(page.indexOf('id="task-approval"'), page.indexOf('id="task-ship"'));
    expect(section).toContain(
      `<p class="small signal-wait" data-signal-wait="approved">waiting for signal approved (until ${formatInstant(deadline)} UTC)</p>`,
    );
    expect(section).toContain(`action="/api/executions/${waiting.id}/signal" data-method="POST"`);
    expect(section).toContain('<input name="name" value="approved"');
    expect(section).toContain('<textarea name="payload"');
    expect(section).toContain('data-json="Payload"');
    expect(section).toContain('>Signal</button>');
    // The DAG says so too; the tasks that do not wait have no form.
    expect(page).toContain('waits for approved');
    expect(page.split('>Signal</button>')).toHaveLength(2);
  });

  it('escapes the signal name on the page, and says when a wait has no timeout', async () => {
    const page = await text(dashboard, `/executions/${unsafe.id}`);
    expect(page).toContain('waiting for signal &lt;script&gt;alert(1)&lt;/script&gt; (no timeout)');
    expect(page).toContain('value="&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(page).not.toContain('<script>alert(1)');
  });

  it('shows the wait but no form in read-only mode, and refuses the action with 403', async () => {
    const readOnly = createDashboard({ client: runner, readOnly: true });
    const page = await text(readOnly, `/executions/${waiting.id}`);
    expect(page).toContain('waiting for signal approved (until');
    expect(page).not.toContain('>Signal</button>');
    const response = await post(
      readOnly,
      `/api/executions/${waiting.id}/signal`,
      { name: 'approved' },
      {
        'X-Orrery-Csrf': await csrfOf(readOnly),
      },
    );
    expect(response.status).toBe(403);
    expect(((await response.json()) as Loose).error.code).toBe('READ_ONLY');
    expect(await approvalTask()).toMatchObject({ status: 'ready', waitsUntil: deadline });
  });

  it('refuses the action without the CSRF token, from another origin, and when authorize says no', async () => {
    const missing = await signal(waiting.id, { name: 'approved' }, {});
    expect(missing.status).toBe(403);
    expect(((await missing.json()) as Loose).error.code).toBe('CSRF');
    const foreign = await signal(
      waiting.id,
      { name: 'approved' },
      { 'X-Orrery-Csrf': csrf, Origin: 'http://evil.example' },
    );
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as Loose).error.code).toBe('ORIGIN_NOT_ALLOWED');
    const locked = createDashboard({ client: runner, authorize: () => false });
    const unauthorised = await post(
      locked,
      `/api/executions/${waiting.id}/signal`,
      { name: 'approved' },
      {
        'X-Orrery-Csrf': csrf,
      },
    );
    expect(unauthorised.status).toBe(401);
    expect(await approvalTask()).toMatchObject({ status: 'ready', waitsUntil: deadline });
  });

  it('answers 400 for a bad name or body, 404 for an unknown execution, writing nothing', async () => {
    for (const body of [{ name: '' }, { payload: 1 }, { name: 7 }]) {
      const response = await signal(waiting.id, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(((await response.json()) as Loose).error).toMatchObject({
        code: 'VALIDATION',
        message: expect.stringContaining('A signal name must be 1 to 200 characters'),
      });
    }
    const notJson = await dashboard.fetch(
      new Request(`${ORIGIN}/api/executions/${waiting.id}/signal`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'X-Orrery-Csrf': csrf },
        body: '{"name": "approved", payload: }',
      }),
    );
    expect(notJson.status).toBe(400);
    const unknown = await signal(randomUUID(), { name: 'approved' });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as Loose).error.code).toBe('EXECUTION_NOT_FOUND');
    expect(await approvalTask()).toMatchObject({ status: 'ready', waitsUntil: deadline });
  });

  it('sends the signal with its payload: the wait completes, the pipeline goes on, the form is gone', async () => {
    const response = await signal(waiting.id, { name: 'approved', payload: { by: 'ada' } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      message: 'Sent signal "approved".',
      executionId: waiting.id,
      name: 'approved',
      sent: true,
    });
    const result = await waiting.wait();
    expect(result.status).toBe('completed');
    expect(result.finalContext).toMatchObject({ approval: { by: 'ada' }, shipped: true });
    const page = await text(dashboard, `/executions/${waiting.id}`);
    expect(page).not.toContain('>Signal</button>');
    expect(page).not.toContain('waiting for signal');
  });

  it('refuses a signal to an ended execution with 400 and the engine message', async () => {
    const response = await signal(waiting.id, { name: 'other' });
    expect(response.status).toBe(400);
    expect(((await response.json()) as Loose).error.message).toBe(
      `Execution ${waiting.id} has ended (completed); a signal reaches only an execution that has not.`,
    );
  });

  it('sends a signal without a payload as the form does when it is left empty: the task sets null', async () => {
    expect((await signal(unsafe.id, { name: HOSTILE_NAME })).status).toBe(200);
    const result = await unsafe.wait();
    expect(result.status).toBe('completed');
    expect(result.finalContext.gate).toBeNull();
  });
});
