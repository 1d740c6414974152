import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type DefaultRunner, defineWorkflow, isOrreryError, ManualClock } from '@orreryjs/runner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../../test/support/http.js';
import { createDashboard, type Dashboard } from '../src/index.js';
import { BACKENDS, createRunner, csrfOf, etl, HOSTILE_NAME, ORIGIN, post, waitFor } from './support.js';

// biome-ignore lint/suspicious/noExplicitAny: the API's JSON bodies, read field by field
type Loose = any;

async function getJson(dashboard: Dashboard, path: string): Promise<{ status: number; body: Loose }> {
  const response = await dashboard.fetch(new Request(`${ORIGIN}${path}`));
  return { status: response.status, body: await response.json() };
}

/** The Add form's body as app.js sends it: every value a string, checkboxes as "true"/"false". */
const GUARDED_FORM = {
  name: 'guarded',
  workflowName: 'etl',
  cronExpression: '30 2 * * *',
  timezone: 'America/New_York',
  overlapPolicy: 'buffer_one',
  catchupPolicy: 'skip',
  maxRuns: '3',
  jitterMs: '',
  'dst.repeated': 'last',
  'dst.gap': '',
  startAt: '',
  endAt: '2099-01-01T00:00:00',
  context: '{"region":"eu"}',
  note: HOSTILE_NAME,
  pauseOnFailure: 'true',
  enabled: 'true',
};

describe.each(BACKENDS)('dashboard API on $name', (backend) => {
  let db: ReturnType<(typeof BACKENDS)[number]['open']>;
  let runner: DefaultRunner;
  let dashboard: Dashboard;
  let csrf: string;

  beforeAll(async () => {
    db = backend.open();
    runner = await createRunner(db.config, { enableCronScheduling: false });
    await runner.start();
    await runner.addCronSchedule({
      name: 'nightly',
      workflowName: 'etl',
      cronExpression: '30 2 * * *',
      timezone: 'America/New_York',
    });
    await runner.addCronSchedule({ name: HOSTILE_NAME, workflowName: 'etl', cronExpression: '0 9 * * MON-FRI' });
    await runner.addCronSchedule({ name: 'doomed', workflowName: 'etl', cronExpression: '@hourly' });
    dashboard = createDashboard({ client: runner });
    csrf = await csrfOf(dashboard);
  });

  afterAll(async () => {
    await runner?.shutdown();
    await db?.remove();
  });

  it('lists schedules with the expression in words and the next 5 runs, paginated', async () => {
    const all = await getJson(dashboard, '/api/schedules');
    expect(all.status).toBe(200);
    const nightly = all.body.items.find((v: Loose) => v.schedule.name === 'nightly');
    expect(nightly.description).toBe('At 02:30 AM');
    expect(nightly.nextRuns).toHaveLength(5);
    expect(new Date(nightly.nextRuns[0]).getTime()).toBeGreaterThan(Date.now());
    const first = await getJson(dashboard, '/api/schedules?limit=1');
    expect(first.body.items).toHaveLength(1);
    expect(first.body.hasMore).toBe(true);
    const last = await getJson(dashboard, '/api/schedules?limit=2&offset=2');
    expect(last.body.items).toHaveLength(1);
    expect(last.body.hasMore).toBe(false);
  });

  it('triggers a schedule and shows the manual slot in its ledger and its execution', async () => {
    const response = await post(dashboard, '/api/schedules/nightly/trigger', {}, { 'X-Orrery-Csrf': csrf });
    expect(response.status).toBe(200);
    const { executionId } = (await response.json()) as { executionId: string };
    const ledger = await getJson(dashboard, '/api/schedules/nightly/ledger');
    expect(ledger.body.items.map((r: Loose) => [r.source, r.pipelineExecutionId])).toEqual([['manual', executionId]]);
    await runner.getExecutionResult(executionId);
    const detail = await getJson(dashboard, `/api/executions/${executionId}`);
    expect(detail.body.workflowName).toBe('etl');
    expect(detail.body.tasks.map((t: Loose) => t.taskId).sort()).toEqual(['audit', 'extract', 'load', 'transform']);
  });

  it('answers 409 SCHEDULE_OVERLAP to a trigger of a skip schedule whose pipeline is still active', async () => {
    // A runner never started runs no task: the first pipeline stays pending, so active.
    const idle = backend.open();
    const client = await createRunner(idle.config, { enableCronScheduling: false });
    try {
      const single = { name: 'single', workflowName: 'etl', cronExpression: '@daily' };
      await client.addCronSchedule({ ...single, overlapPolicy: 'skip' });
      const first = await client.triggerCronSchedule('single');
      const board = createDashboard({ client });
      const response = await post(board, '/api/schedules/single/trigger', {}, { 'X-Orrery-Csrf': await csrfOf(board) });
      expect(response.status).toBe(409);
      const { error } = (await response.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe('SCHEDULE_OVERLAP');
      expect(error.message).toContain(first.id);
      // Force trigger: starts one whatever the policy; a bad value is a 400, nothing started.
      const csrfToken = await csrfOf(board);
      const bad = await post(
        board,
        '/api/schedules/single/trigger',
        { overlapPolicy: 'skip' },
        { 'X-Orrery-Csrf': csrfToken },
      );
      expect(bad.status).toBe(400);
      const forced = await post(
        board,
        '/api/schedules/single/trigger',
        { overlapPolicy: 'allow' },
        { 'X-Orrery-Csrf': csrfToken },
      );
      expect(forced.status).toBe(200);
      const { executionId } = (await forced.json()) as { executionId: string };
      expect(executionId).not.toBe(first.id);
      const ledger = await client.getCronExecutionHistory('single');
      expect(
        ledger
          .filter((r) => r.pipelineExecutionId !== null)
          .map((r) => r.pipelineExecutionId)
          .sort(),
      ).toEqual([first.id, executionId].sort());
    } finally {
      await client.shutdown();
      await idle.remove();
    }
  });

  it('pauses and resumes a schedule when the request carries the CSRF token', async () => {
    const paused = await post(
      dashboard,
      '/api/schedules/nightly/pause',
      { note: 'vendor outage' },
      { 'X-Orrery-Csrf': csrf },
    );
    expect(paused.status).toBe(200);
    expect((await runner.getCronSchedule('nightly')).enabled).toBe(false);
    const resumed = await post(dashboard, '/api/schedules/nightly/resume', {}, { 'X-Orrery-Csrf': csrf });
    expect(resumed.status).toBe(200);
    expect((await runner.getCronSchedule('nightly')).enabled).toBe(true);
  });

  it('backfills a range and refuses a range that is not dates with 400 and the error code', async () => {
    const bad = await post(
      dashboard,
      '/api/schedules/nightly/backfill',
      { start: 'yesterday', end: '2026-01-01' },
      { 'X-Orrery-Csrf': csrf },
    );
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: { code: 'VALIDATION', message: expect.stringContaining('"yesterday"') },
    });
    const inverted = await post(
      dashboard,
      '/api/schedules/nightly/backfill',
      { start: '2024-01-05T00:00:00Z', end: '2024-01-01T00:00:00Z' },
      { 'X-Orrery-Csrf': csrf },
    );
    expect(inverted.status).toBe(400);
    expect(((await inverted.json()) as Loose).error.code).toBe('VALIDATION');
    const ok = await post(
      dashboard,
      '/api/schedules/nightly/backfill',
      { start: '2024-01-01T00:00:00Z', end: '2024-01-04T00:00:00Z' },
      { 'X-Orrery-Csrf': csrf },
    );
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ created: 3, existing: 0 });
  });

  it('answers 400 with the code for bad filters and 404 for an unknown schedule', async () => {
    const status = await getJson(dashboard, '/api/executions?status=exploded');
    expect(status.status).toBe(400);
    expect(status.body.error.code).toBe('VALIDATION');
    expect(status.body.error.message).toContain('exploded');
    const limit = await getJson(dashboard, '/api/schedules?limit=0');
    expect(limit.status).toBe(400);
    const unknown = await getJson(dashboard, '/api/schedules/no-such-schedule');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('SCHEDULE_NOT_FOUND');
  });

  it('refuses a state-changing request without the CSRF header, and with a wrong one', async () => {
    const missing = await post(dashboard, '/api/schedules/nightly/pause', {});
    expect(missing.status).toBe(403);
    expect(((await missing.json()) as Loose).error.code).toBe('CSRF');
    const wrong = await post(dashboard, '/api/schedules/nightly/pause', {}, { 'X-Orrery-Csrf': `${csrf}x` });
    expect(wrong.status).toBe(403);
    expect((await runner.getCronSchedule('nightly')).enabled).toBe(true);
    const add = await post(dashboard, '/api/schedules', { ...GUARDED_FORM, name: 'sneaky' });
    expect(add.status).toBe(403);
    const edit = await post(dashboard, '/api/schedules/nightly', { maxRuns: '1' }, {}, 'PATCH');
    expect(edit.status).toBe(403);
    await expect(runner.getCronSchedule('sneaky')).rejects.toThrow(/sneaky/);
    expect((await runner.getCronSchedule('nightly')).maxRuns).toBeNull();
  });

  it('refuses every action with 403 in read-only mode and hides the buttons', async () => {
    const readOnly = createDashboard({ client: runner, readOnly: true });
    const token = await csrfOf(readOnly);
    const response = await post(readOnly, '/api/schedules/nightly/pause', {}, { 'X-Orrery-Csrf': token });
    expect(response.status).toBe(403);
    expect(((await response.json()) as Loose).error.code).toBe('READ_ONLY');
    expect((await runner.getCronSchedule('nightly')).enabled).toBe(true);
    const edit = await post(readOnly, '/api/schedules/nightly', { maxRuns: '1' }, { 'X-Orrery-Csrf': token }, 'PATCH');
    expect(edit.status).toBe(403);
    expect((await runner.getCronSchedule('nightly')).maxRuns).toBeNull();
    const page = await (await readOnly.fetch(new Request(`${ORIGIN}/schedules`))).text();
    expect(page).toContain('nightly');
    expect(page).not.toContain('>Pause</button>');
    expect(page).not.toContain('>Add schedule</button>');
    const detail = await (await readOnly.fetch(new Request(`${ORIGIN}/schedules/nightly`))).text();
    expect(detail).not.toContain('>Save changes</button>');
  });

  it('answers 401 when authorize returns false, for pages and actions alike', async () => {
    const seen: string[] = [];
    const locked = createDashboard({
      client: runner,
      authorize: (request) => {
        seen.push(new URL(request.url).pathname);
        return request.headers.get('authorization') === 'Bearer ops';
      },
    });
    expect((await locked.fetch(new Request(`${ORIGIN}/schedules`))).status).toBe(401);
    expect((await post(locked, '/api/schedules/nightly/pause', {}, { 'X-Orrery-Csrf': csrf })).status).toBe(401);
    expect(
      (await locked.fetch(new Request(`${ORIGIN}/api/schedules`, { headers: { authorization: 'Bearer ops' } }))).status,
    ).toBe(200);
    expect(seen).toEqual(['/schedules', '/api/schedules/nightly/pause', '/api/schedules']);
    expect((await runner.getCronSchedule('nightly')).enabled).toBe(true);
  });

  it('sends the Response authorize returns as it is, such as a Basic challenge', async () => {
    const basic = `Basic ${Buffer.from('ops:secret').toString('base64')}`;
    const challenged = createDashboard({
      client: runner,
      authorize: (request) =>
        request.headers.get('authorization') === basic ||
        new Response('Log in to use the dashboard.', {
          status: 401,
          headers: { 'WWW-Authenticate': 'Basic realm="orrery", charset="UTF-8"' },
        }),
    });
    const refused = await challenged.fetch(new Request(`${ORIGIN}/schedules`));
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Basic realm="orrery", charset="UTF-8"');
    expect(await refused.text()).toBe('Log in to use the dashboard.');
    const action = await post(challenged, '/api/schedules/nightly/pause', {}, { 'X-Orrery-Csrf': csrf });
    expect(action.headers.get('www-authenticate')).toContain('Basic');
    expect((await runner.getCronSchedule('nightly')).enabled).toBe(true);
    const page = await challenged.fetch(new Request(`${ORIGIN}/schedules`, { headers: { authorization: basic } }));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('nightly');
  });

  it('answers only allowedHosts through handle: a rebound Host gets 403 for the page, the API and an action', async () => {
    const guarded = createDashboard({ client: runner, basePath: '/ops', allowedHosts: ['ops.example.com'] });
    const server: Server = createServer((req, res) => guarded.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const at = (path: string) => `http://127.0.0.1:${port}/ops${path}`;
      const own = { Host: 'ops.example.com' };
      const page = await httpRequest(at('/'), { headers: own });
      expect(page.status).toBe(200);
      const token = /<meta name="orrery-csrf" content="([^"]+)">/.exec(page.body)?.[1] ?? '';
      expect((await httpRequest(at('/api/schedules'), { headers: { Host: `ops.example.com:${port}` } })).status).toBe(
        200,
      );
      const forged = { Host: 'rebind.attacker.example' };
      const refusedPage = await httpRequest(at('/'), { headers: forged });
      expect(refusedPage.status).toBe(403);
      expect(refusedPage.body).not.toContain(token);
      expect(JSON.parse(refusedPage.body)).toMatchObject({
        error: { code: 'HOST_NOT_ALLOWED', message: expect.stringContaining('allowedHosts') },
      });
      expect((await httpRequest(at('/api/schedules'), { headers: forged })).status).toBe(403);
      expect((await httpRequest(at('/'), { headers: { Host: `127.0.0.1:${port}` } })).status).toBe(403);
      const act = (action: string, headers: Record<string, string>) =>
        httpRequest(at(`/api/schedules/nightly/${action}`), {
          method: 'POST',
          headers: { 'X-Orrery-Csrf': token, 'content-type': 'application/json', ...headers },
          body: '{}',
        });
      expect((await act('pause', forged)).status).toBe(403);
      const foreign = await act('pause', { ...own, Origin: 'http://rebind.attacker.example' });
      expect(foreign.status).toBe(403);
      expect(JSON.parse(foreign.body).error.code).toBe('ORIGIN_NOT_ALLOWED');
      expect((await runner.getCronSchedule('nightly')).enabled).toBe(true);
      // A proxy ending TLS: the browser's origin is https, the request reaching the dashboard http.
      expect((await act('pause', { ...own, Origin: 'https://ops.example.com' })).status).toBe(200);
      expect((await runner.getCronSchedule('nightly')).enabled).toBe(false);
      expect((await act('resume', own)).status).toBe(200);
      expect((await runner.getCronSchedule('nightly')).enabled).toBe(true);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('answers any Host without allowedHosts, but refuses an action from another origin', async () => {
    const page = await dashboard.fetch(new Request('http://any.name.example/schedules'));
    expect(page.status).toBe(200);
    const foreign = await post(
      dashboard,
      '/api/schedules/nightly/pause',
      {},
      { 'X-Orrery-Csrf': csrf, Origin: 'http://evil.example' },
    );
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as Loose).error.code).toBe('ORIGIN_NOT_ALLOWED');
    expect((await runner.getCronSchedule('nightly')).enabled).toBe(true);
    const own = await post(dashboard, '/api/schedules/nightly/pause', {}, { 'X-Orrery-Csrf': csrf, Origin: ORIGIN });
    expect(own.status).toBe(200);
    expect((await runner.getCronSchedule('nightly')).enabled).toBe(false);
    await post(dashboard, '/api/schedules/nightly/resume', {}, { 'X-Orrery-Csrf': csrf, Origin: ORIGIN });
    expect((await runner.getCronSchedule('nightly')).enabled).toBe(true);
  });

  it('refuses allowedHosts that are not a non-empty list of hosts with ConfigurationError', () => {
    const bad: unknown[] = [[], 'ops.example.com', ['*'], ['https://ops.example.com/'], ['::1'], ['a b'], [42]];
    for (const allowedHosts of bad) {
      let thrown: unknown;
      try {
        createDashboard({ client: runner, allowedHosts: allowedHosts as string[] });
      } catch (error) {
        thrown = error;
      }
      expect(isOrreryError(thrown, 'CONFIGURATION'), String(allowedHosts)).toBe(true);
      expect((thrown as Error).message).toContain('allowedHosts');
    }
    expect(() =>
      createDashboard({ client: runner, allowedHosts: ['[::1]:4600', 'Ops.Example.com', 'localhost'] }),
    ).not.toThrow();
  });

  it('shows an HTML-hostile schedule name as text, never as markup', async () => {
    const page = await (await dashboard.fetch(new Request(`${ORIGIN}/schedules`))).text();
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page).not.toContain(HOSTILE_NAME);
    const id = (await runner.getCronSchedule(HOSTILE_NAME)).id;
    const detail = await dashboard.fetch(new Request(`${ORIGIN}/schedules/${id}`));
    expect(detail.headers.get('content-security-policy')).toContain("script-src 'self'");
    const text = await detail.text();
    expect(text).toContain('<h1>&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(text).toContain('<input name="name" required value="&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(text).not.toContain(HOSTILE_NAME);
  });

  it('offers every overlap policy, catch-up policy and DST choice in the Add form', async () => {
    const page = await (await dashboard.fetch(new Request(`${ORIGIN}/schedules`))).text();
    const form = /<form class="act schedule-form" action="\/api\/schedules" data-method="POST">[\s\S]*?<\/form>/.exec(
      page,
    )?.[0];
    expect(form).toBeDefined();
    const optionsOf = (name: string) =>
      [
        ...(new RegExp(`<select name="${name}"[^>]*>([\\s\\S]*?)</select>`).exec(form ?? '')?.[1] ?? '').matchAll(
          /<option value="([^"]*)"/g,
        ),
      ].map((m) => m[1]);
    expect(optionsOf('overlapPolicy')).toEqual(['allow', 'skip', 'buffer_one', 'buffer_all', 'cancel_other']);
    expect(optionsOf('catchupPolicy')).toEqual(['skip', 'run_once', 'run_all']);
    expect(optionsOf('dst\\.repeated')).toEqual(['', 'first', 'last', 'both']);
    expect(optionsOf('dst\\.gap')).toEqual(['', 'shift', 'skip']);
    expect(form).toContain('<option value="allow" selected>');
    expect(form).toContain('<option value="run_once" selected>');
    expect(form).toContain('<select name="workflowName" required><option>etl</option><option>gated</option></select>');
    for (const field of ['maxRuns', 'note', 'pauseOnFailure', 'enabled', 'jitterMs', 'startAt', 'endAt', 'context'])
      expect(form).toContain(`name="${field}"`);
  });

  it('adds a schedule from the form fields and stores and shows every field', async () => {
    const response = await post(dashboard, '/api/schedules', GUARDED_FORM, { 'X-Orrery-Csrf': csrf });
    expect(response.status).toBe(201);
    const body = (await response.json()) as Loose;
    expect(body.redirect).toBe(`/schedules/${body.schedule.id}`);
    expect(await runner.getCronSchedule('guarded')).toMatchObject({
      workflowName: 'etl',
      timezone: 'America/New_York',
      overlapPolicy: 'buffer_one',
      catchupPolicy: 'skip',
      pauseOnFailure: true,
      maxRuns: 3,
      runCount: 0,
      // The rule left at its default takes the fixed hour's: shift.
      dst: { repeated: 'last', gap: 'shift' },
      jitterMs: 0,
      startAt: null,
      endAt: new Date('2099-01-01T00:00:00Z'),
      context: { region: 'eu' },
      note: HOSTILE_NAME,
      enabled: true,
    });
    const list = await (await dashboard.fetch(new Request(`${ORIGIN}/schedules`))).text();
    const row = /<tr data-schedule="guarded">[\s\S]*?<\/tr>/.exec(list)?.[0] ?? '';
    expect(row).toContain('overlap buffer one · pauses on failure · DST: repeated last, gap shift');
    expect(row).toContain('0 of 3 scheduled runs');
    // A policy at its default is left out of the list, where it would repeat on every row.
    expect(/<tr data-schedule="nightly">[\s\S]*?<\/tr>/.exec(list)?.[0]).not.toContain('overlap allow');
    expect(row).toContain('<div class="small muted note">&lt;script&gt;alert(1)&lt;/script&gt;</div>');
    const detail = await (await dashboard.fetch(new Request(`${ORIGIN}/schedules/guarded`))).text();
    expect(detail).toContain('<strong>Note:</strong> &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(detail).toContain('0 of 3 scheduled runs');
    // The edit form shows the stored values.
    expect(detail).toContain('<option value="buffer_one" selected>');
    expect(detail).toContain('<option value="last" selected>');
    expect(detail).toContain('name="maxRuns" type="number" min="1" step="1" value="3"');
    expect(detail).toContain('name="endAt" type="datetime-local" step="1" value="2099-01-01T00:00:00"');
    expect(detail).toMatch(/<input type="checkbox" name="pauseOnFailure" value="true" checked>/);
    expect(detail).not.toContain(HOSTILE_NAME);
  });

  it('edits a schedule: sets the fields, and an empty field goes back to its default', async () => {
    const cleared = await post(
      dashboard,
      '/api/schedules/guarded',
      {
        overlapPolicy: 'cancel_other',
        pauseOnFailure: 'false',
        maxRuns: '',
        'dst.repeated': '',
        'dst.gap': '',
        note: '',
        endAt: '',
      },
      { 'X-Orrery-Csrf': csrf },
      'PATCH',
    );
    expect(cleared.status).toBe(200);
    expect(await runner.getCronSchedule('guarded')).toMatchObject({
      overlapPolicy: 'cancel_other',
      pauseOnFailure: false,
      maxRuns: null,
      dst: null,
      note: null,
      endAt: null,
      catchupPolicy: 'skip',
      context: { region: 'eu' },
    });
    // A JSON client sends the input's own types.
    const typed = await post(
      dashboard,
      '/api/schedules/guarded',
      { overlapPolicy: 'buffer_all', maxRuns: 7, dst: { gap: 'skip' }, pauseOnFailure: true, note: 'owned by data' },
      { 'X-Orrery-Csrf': csrf },
      'PATCH',
    );
    expect(typed.status).toBe(200);
    expect(((await typed.json()) as Loose).schedule).toMatchObject({ maxRuns: 7, overlapPolicy: 'buffer_all' });
    expect(await runner.getCronSchedule('guarded')).toMatchObject({
      overlapPolicy: 'buffer_all',
      maxRuns: 7,
      dst: { repeated: 'first', gap: 'skip' },
      pauseOnFailure: true,
      note: 'owned by data',
    });
    const detail = await (await dashboard.fetch(new Request(`${ORIGIN}/schedules/guarded`))).text();
    expect(detail).toContain('overlap buffer all · pauses on failure · DST: repeated first, gap skip');
    expect(detail).toContain('0 of 7 scheduled runs');
    expect(detail).toContain('<strong>Note:</strong> owned by data');
  });

  it('refuses bad schedule fields with 400 and the engine message, and writes nothing', async () => {
    const before = await runner.getCronSchedule('guarded');
    const count = (await runner.listCronSchedules()).length;
    const cases: Array<[string, Record<string, unknown>, string, string]> = [
      ['PATCH', { overlapPolicy: 'queue' }, 'VALIDATION', "overlapPolicy must be one of 'allow', 'skip', 'buffer_one'"],
      ['PATCH', { maxRuns: '0' }, 'VALIDATION', 'maxRuns must be a positive integer or null'],
      ['PATCH', { maxRuns: 'lots' }, 'VALIDATION', 'maxRuns must be a positive integer or null'],
      ['PATCH', { 'dst.gap': 'never' }, 'VALIDATION', "dst.gap must be one of 'shift', 'skip'"],
      ['PATCH', { pauseOnFailure: 'maybe' }, 'VALIDATION', 'pauseOnFailure must be true or false'],
      ['PATCH', { context: '{"region":' }, 'VALIDATION', 'context must be a JSON object'],
      ['PATCH', { startAt: 'soon' }, 'VALIDATION', 'startAt "soon" is not a date'],
      ['PATCH', { note: 'x'.repeat(1001) }, 'VALIDATION', 'note must be a string of at most 1000 characters'],
      ['PATCH', { tz: 'Europe/Paris' }, 'VALIDATION', 'did you mean "timezone"'],
      ['POST', { ...GUARDED_FORM, name: 'refused', overlapPolicy: 'later' }, 'VALIDATION', 'overlapPolicy'],
      ['POST', { ...GUARDED_FORM, name: 'refused', cronExpression: '*/90 * * * *' }, 'INVALID_CRON_EXPRESSION', '90'],
      ['POST', { workflowName: 'etl', cronExpression: '@daily' }, 'VALIDATION', 'needs a name'],
    ];
    for (const [method, fields, code, message] of cases) {
      const path = method === 'POST' ? '/api/schedules' : '/api/schedules/guarded';
      const response = await post(dashboard, path, fields, { 'X-Orrery-Csrf': csrf }, method);
      expect(response.status, JSON.stringify(fields).slice(0, 80)).toBe(400);
      const { error } = (await response.json()) as Loose;
      expect(error.code).toBe(code);
      expect(error.message).toContain(message);
    }
    expect(await runner.getCronSchedule('guarded')).toEqual(before);
    expect(await runner.listCronSchedules()).toHaveLength(count);
  });

  it('shows a failed execution with its failed task in the DAG and its error', async () => {
    const result = await runner.execute('etl', { fail: true });
    expect(result.status).toBe('failed');
    const failed = await getJson(dashboard, '/api/executions?status=failed');
    expect(failed.body.items.map((e: Loose) => e.executionId)).toContain(result.executionId);
    const page = await (await dashboard.fetch(new Request(`${ORIGIN}/executions/${result.executionId}`))).text();
    expect(page).toMatch(/<g class="node st-failed" data-task="load" data-status="failed">/);
    expect(page).toMatch(/<g class="node st-completed" data-task="extract"/);
    expect(page).toContain('warehouse refused the batch');
  });

  it('shows a skipped task as skipped with its reason, never as an error', async () => {
    const result = await runner.execute('gated', {});
    expect(result.status).toBe('completed');
    expect(result.tasks.find((t) => t.taskId === 'optional')?.status).toBe('skipped');
    const page = await (await dashboard.fetch(new Request(`${ORIGIN}/executions/${result.executionId}`))).text();
    expect(page).toMatch(/<g class="node st-skipped" data-task="optional" data-status="skipped">/);
    expect(page).not.toContain('Failed tasks');
    const optional = page.slice(page.indexOf('id="task-optional"'), page.indexOf('id="task-report"'));
    expect(optional).toContain('<p class="small muted skip-reason">Skipped: when returned false.</p>');
    expect(optional).not.toContain('error-msg');
    expect(optional).not.toContain('>Error<');
  });

  it('retries a failed execution through the API, which runs its failed task again', async () => {
    const result = await runner.execute('etl', { fail: true });
    expect(result.tasks.find((t) => t.taskId === 'load')?.attempts).toBe(1);
    const page = await (await dashboard.fetch(new Request(`${ORIGIN}/executions/${result.executionId}`))).text();
    expect(page).toContain('>Retry</button>');
    const response = await post(
      dashboard,
      `/api/executions/${result.executionId}/retry`,
      {},
      { 'X-Orrery-Csrf': csrf },
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ executionId: result.executionId });
    await waitFor(async () => {
      const again = await runner.getExecutionResult(result.executionId);
      return again.status === 'failed' && again.tasks.find((t) => t.taskId === 'load')?.attempts === 2;
    });
    const done = await runner.execute('etl', {});
    const refused = await post(dashboard, `/api/executions/${done.executionId}/retry`, {}, { 'X-Orrery-Csrf': csrf });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as Loose).error.code).toBe('VALIDATION');
  });

  it('lists each attempt of a task run more than once with its runner, outcome and escaped error', async () => {
    const result = await runner.execute('etl', { fail: HOSTILE_NAME });
    expect(result.status).toBe('failed');
    await runner.retryExecution(result.executionId);
    await waitFor(async () => {
      const again = await runner.getExecutionResult(result.executionId);
      return again.status === 'failed' && again.tasks.find((t) => t.taskId === 'load')?.attempts === 2;
    });
    const page = await (await dashboard.fetch(new Request(`${ORIGIN}/executions/${result.executionId}`))).text();
    const load = page.slice(page.indexOf('id="task-load"'));
    const rows = [...load.matchAll(/<tr data-attempt="(\d+)">([\s\S]*?)<\/tr>/g)].map((m) => [
      m[1],
      [...m[2]!.matchAll(/<td data-label="(\w+)">(?:<[^>]+>)*([^<]*)/g)].map((cell) => `${cell[1]}=${cell[2]}`),
    ]);
    const escaped = '&lt;script&gt;alert(1)&lt;/script&gt;';
    expect(
      rows.map(([attempt, cells]) => [attempt, (cells as string[]).filter((c) => !/^(Started|Ended)=/.test(c))]),
    ).toEqual([
      ['1', ['Attempt=1', 'Outcome=failed', `Runner=${runner.runnerId}`, `Error=NonRetryableError: ${escaped}`]],
      ['2', ['Attempt=2', 'Outcome=failed', `Runner=${runner.runnerId}`, `Error=NonRetryableError: ${escaped}`]],
    ]);
    expect(page).not.toContain(HOSTILE_NAME);
    // A task run once lists no attempts: its section says it all.
    expect(page.slice(page.indexOf('id="task-extract"'), page.indexOf('id="task-transform"'))).not.toContain(
      'data-attempt',
    );
  });

  it('shows the schedule link, output and error stack of a scheduled execution', async () => {
    const execution = await runner.triggerCronSchedule('nightly');
    await execution.wait();
    const list = await getJson(dashboard, '/api/executions?schedule=nightly');
    expect(list.body.items.map((e: Loose) => e.executionId)).toContain(execution.id);
    expect(list.body.items.every((e: Loose) => e.scheduleId === list.body.items[0].scheduleId)).toBe(true);
    const page = await (await dashboard.fetch(new Request(`${ORIGIN}/executions/${execution.id}`))).text();
    expect(page).toMatch(/<a href="\/schedules\/[^"]+" data-schedule-link>nightly<\/a>/);
    expect(page).toContain('&quot;rows&quot;: 3');
    const failed = await runner.execute('etl', { fail: true });
    const failedPage = await (await dashboard.fetch(new Request(`${ORIGIN}/executions/${failed.executionId}`))).text();
    expect(failedPage).toContain('<p class="error-msg">');
    expect(failedPage).toMatch(/Stack trace \(\d+ lines?\)/);
  });

  it('shows a handed-off slot whose pipeline failed as failed in the timeline, and links the execution its note names', async () => {
    await runner.addCronSchedule({
      name: 'fragile',
      workflowName: 'etl',
      cronExpression: '@hourly',
      context: { fail: true },
    });
    const execution = await runner.triggerCronSchedule('fragile');
    expect((await execution.wait()).status).toBe('failed');
    await runner.setCronScheduleEnabled('fragile', false, {
      note: `paused after failure of execution ${execution.id}`,
    });
    const page = await (await dashboard.fetch(new Request(`${ORIGIN}/schedules/fragile`))).text();
    const timeline = page.slice(page.indexOf('aria-label="Ledger"'));
    expect(timeline).toMatch(/<li class="t-failed" data-status="handed_off" data-outcome="failed">/);
    expect(timeline).toContain('<span class="badge st-failed">failed</span>');
    expect(timeline).not.toContain('st-handed_off');
    const executionLink = `paused after failure of execution <a href="/executions/${execution.id}" class="mono">${execution.id}</a>`;
    expect(page).toContain(`<strong>Note:</strong> ${executionLink}</p>`);
    const list = await (await dashboard.fetch(new Request(`${ORIGIN}/schedules`))).text();
    expect(list).toContain(executionLink);
    await runner.deleteCronSchedule('fragile');
  });

  it('reports the overview: health, executions by status and cron counts', async () => {
    const overview = await getJson(dashboard, '/api/overview');
    expect(overview.status).toBe(200);
    expect(overview.body.health.status).toBe('ok');
    expect(overview.body.executionsByStatus.failed.count).toBeGreaterThanOrEqual(1);
    expect(overview.body.cron.lostExecutions).toBe(0);
  });

  it('deletes a schedule with DELETE and keeps the others', async () => {
    const response = await post(dashboard, '/api/schedules/doomed', undefined, { 'X-Orrery-Csrf': csrf }, 'DELETE');
    expect(response.status).toBe(200);
    expect((await getJson(dashboard, '/api/schedules/doomed')).status).toBe(404);
    expect((await getJson(dashboard, '/api/schedules/nightly')).status).toBe(200);
  });

  it('serves node:http under a base path through handle', async () => {
    const mounted = createDashboard({ client: runner, basePath: '/ops' });
    const server: Server = createServer((req, res) => mounted.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const api = await fetch(`http://127.0.0.1:${port}/ops/api/schedules`);
      expect(api.status).toBe(200);
      expect(((await api.json()) as Loose).items.map((v: Loose) => v.schedule.name)).toContain('nightly');
      const page = await (await fetch(`http://127.0.0.1:${port}/ops/schedules`)).text();
      expect(page).toContain('href="/ops/schedules/');
      expect(page).toContain('src="/ops/assets/app.js"');
      // Every page links its icon, so browsers do not ask for a /favicon.ico that is not there.
      expect(page).toContain('<link rel="icon" type="image/svg+xml" href="/ops/assets/icon.svg">');
      const icon = await fetch(`http://127.0.0.1:${port}/ops/assets/icon.svg`);
      expect(icon.status).toBe(200);
      expect(icon.headers.get('content-type')).toBe('image/svg+xml');
      const svg = await icon.text();
      expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
      expect(svg.endsWith('</svg>')).toBe(true);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

/** A task that waits until the test opens its gate, so a pipeline stays active. */
let openGate: () => void = () => {};
let gate = Promise.resolve();
const held = defineWorkflow({ name: 'held', tasks: [{ id: 'wait', run: () => gate }] });

describe.each(BACKENDS)('dashboard ledger on $name', (backend) => {
  it('shows a buffered occurrence in the ledger timeline while the earlier one runs', async () => {
    gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    const db = backend.open();
    const clock = new ManualClock(new Date('2026-03-02T10:00:00Z'));
    const runner = await createRunner(db.config, {
      workflows: [etl, held],
      clock,
      pollIntervalMs: 20,
      cronPollIntervalMs: 20,
      taskLeaseMs: 6 * 3_600_000,
    });
    try {
      await runner.addCronSchedule({
        name: 'one-at-a-time',
        workflowName: 'held',
        cronExpression: '* * * * *',
        overlapPolicy: 'buffer_one',
      });
      await runner.start();
      const dashboard = createDashboard({ client: runner });
      const ledger = async () =>
        (await getJson(dashboard, '/api/schedules/one-at-a-time/ledger')).body.items as Loose[];
      clock.set(new Date('2026-03-02T10:01:00Z'));
      await waitFor(async () => (await ledger()).some((r) => r.status === 'handed_off'));
      clock.set(new Date('2026-03-02T10:02:00Z'));
      await waitFor(async () => (await ledger()).some((r) => r.status === 'buffered'));
      const page = await (await dashboard.fetch(new Request(`${ORIGIN}/schedules/one-at-a-time`))).text();
      expect(page).toMatch(/<li class="t-buffered" data-status="buffered" data-outcome="buffered">/);
      expect(page).toContain('waits for the active run to end');
      expect(page).toContain('overlap buffer one');
    } finally {
      openGate();
      await runner.shutdown();
      await db.remove();
    }
  });
});

describe('dashboard runners page', () => {
  it('leaves out runners last heard from more than a day ago, and lists them when asked', async () => {
    const db = BACKENDS[0]!.open();
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000);
    const gone = await createRunner(db.config, { runnerId: 'gone-two-days-ago', clock: new ManualClock(twoDaysAgo) });
    const here = await createRunner(db.config, { runnerId: 'here-now' });
    try {
      await gone.start();
      await gone.shutdown();
      await here.start();
      const dashboard = createDashboard({ client: here });
      const page = async (path: string) => (await dashboard.fetch(new Request(`${ORIGIN}${path}`))).text();
      const recent = await page('/runners');
      expect(recent).toContain('here-now');
      expect(recent).not.toContain('gone-two-days-ago');
      expect(recent).toContain('1 runner last heard from more than a day ago is hidden');
      expect(recent).toContain('href="/runners?all=1"');
      const all = await page('/runners?all=1');
      expect(all).toContain('here-now');
      expect(all).toContain('gone-two-days-ago');
      expect(all).not.toContain('is hidden');
    } finally {
      await here.shutdown();
      await db.remove();
    }
  });
});
