import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { DefaultRunner } from '@orreryjs/runner';
import { defineWorkflow } from '@orreryjs/runner';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import { createDashboard } from '../src/index.js';
import { layoutProblems } from './layout-checks.js';
import { createRunner, etl, gated, HOSTILE_NAME, order, waitFor } from './support.js';

const CHROMIUM = '/usr/bin/chromium';
/** Every page the test visits, at each viewport (gitignored): look at them after a change of layout. */
const SCREENSHOTS = resolve(import.meta.dirname, 'screenshots');
const LONG_NAME = 'emea_warehouse_nightly_full_reload_v2';
const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const;

describe('dashboard in a real browser (Debian chromium, headless)', () => {
  const file = tempSqliteFile();
  const profile = mkdtempSync(join(tmpdir(), 'orrery-chromium-'));
  let runner: DefaultRunner;
  let server: Server;
  let browser: BrowserContext;
  let page: Page;
  let origin = '';
  let failedId = '';
  let fragileId = '';
  let gatedId = '';
  let waitingId = '';
  let mappedId = '';
  const requested: string[] = [];

  /** Checks that the open page fits each viewport (see layoutProblems), and saves a screenshot of it there. */
  async function screenshots(name: string): Promise<void> {
    for (const viewport of VIEWPORTS) {
      await page.setViewportSize({ width: viewport.width, height: viewport.height });
      await page.screenshot({ path: join(SCREENSHOTS, `${name}-${viewport.name}.png`), fullPage: true });
      expect(await page.evaluate(layoutProblems), `${name} at ${viewport.width}×${viewport.height}`).toEqual([]);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  }

  beforeAll(async () => {
    // `npm test` alone must work on a fresh machine: install Debian's chromium when it is missing.
    if (!existsSync(CHROMIUM)) {
      execFileSync(resolve(import.meta.dirname, '../../../scripts/ensure-chromium.sh'), { stdio: 'inherit' });
    }
    mkdirSync(SCREENSHOTS, { recursive: true });
    // One customer at a time, held until shutdown aborts it: its second pipeline waits, and the
    // Workflows page has a group to show (its name one long word, as customer ids are).
    const throttled = defineWorkflow({
      name: 'throttled',
      concurrency: { key: 'customer', limit: 1 },
      tasks: [
        {
          id: 'hold',
          run: (_ctx, info) => new Promise<void>((done) => info.signal.addEventListener('abort', () => done())),
        },
      ],
    });
    // A map task: one node in the DAG, whatever its number of items.
    const regions = defineWorkflow({
      name: 'regions',
      tasks: [{ id: 'each', map: () => ['north', 'south', 'east'], run: (_ctx, info) => info.item }],
    });
    runner = await createRunner(
      { database: `sqlite:${file.filename}` },
      { cronPollIntervalMs: 100, workflows: [etl, gated, throttled, order, regions] },
    );
    await runner.start();
    await runner.addCronSchedule({
      name: 'nightly',
      workflowName: 'etl',
      cronExpression: '30 2 * * *',
      timezone: 'America/New_York',
    });
    await runner.addCronSchedule({
      name: HOSTILE_NAME,
      workflowName: 'etl',
      cronExpression: '0 9 * * MON-FRI',
      timezone: 'Europe/Paris',
    });
    await runner.addCronSchedule({
      name: 'ticker',
      workflowName: 'etl',
      cronExpression: '*/2 * * * * *',
      enabled: false,
    });
    await runner.backfillCronSchedule('nightly', {
      start: new Date('2024-03-08T00:00:00Z'),
      end: new Date('2024-03-12T00:00:00Z'),
    });
    // A name with no place to break, in a zone whose UTC date differs from its own.
    await runner.addCronSchedule({
      name: LONG_NAME,
      workflowName: 'etl',
      cronExpression: '0 15 8 * * *',
      timezone: 'Asia/Tokyo',
    });
    // Its pipeline fails, so it pauses itself with a note naming that execution.
    await runner.addCronSchedule({
      name: 'fragile-export',
      workflowName: 'etl',
      cronExpression: '@hourly',
      context: { fail: true },
      pauseOnFailure: true,
    });
    fragileId = (await runner.triggerCronSchedule('fragile-export')).id;
    await waitFor(async () => !(await runner.getCronSchedule('fragile-export')).enabled);
    await (await runner.triggerCronSchedule('nightly')).wait();
    failedId = (await runner.execute('etl', { fail: true })).executionId;
    // Run twice, so its page lists the attempts.
    await runner.retryExecution(failedId);
    await waitFor(
      async () => (await runner.getExecutionResult(failedId)).tasks.find((t) => t.taskId === 'load')?.attempts === 2,
    );
    gatedId = (await runner.execute('gated', {})).executionId;
    await runner.execute('etl', { region: 'eu' });
    for (let n = 0; n < 2; n += 1) await runner.executeAsync('throttled', { customer: LONG_NAME });
    await runner.executeAsync('etl', {}, { runAt: new Date('2099-01-01T00:00:00Z') });
    await waitFor(
      async () => (await runner.listExecutions({ workflowName: 'throttled', status: 'running' })).length === 1,
    );
    mappedId = (await runner.execute('regions')).executionId;
    // Waits for the signal "approved" (its page has the Signal form).
    waitingId = (await runner.executeAsync('order')).id;
    await waitFor(
      async () =>
        (await runner.getExecutionResult(waitingId)).tasks.find((t) => t.taskId === 'approval')?.waitsUntil !==
        undefined,
    );

    const dashboard = createDashboard({ client: runner, basePath: '/ops' });
    server = createServer((req, res) => dashboard.handle(req, res));
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1280, height: 800 },
    });
    page = browser.pages()[0] ?? (await browser.newPage());
    page.on('request', (request) => requested.push(request.url()));
    page.on('dialog', (dialog) => void dialog.accept());
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
    await runner?.shutdown();
    file.remove();
    rmSync(profile, { recursive: true, force: true });
  });

  it('shows the overview with health and executions by status', async () => {
    await page.goto(`${origin}/ops/`);
    await expect(page.getByRole('heading', { name: 'Overview' }).isVisible()).resolves.toBe(true);
    const failedStat = page.locator('a.stat', { hasText: 'failed' });
    await expect(failedStat.locator('.v').textContent()).resolves.toBe('2');
    await page.locator('#live.on').waitFor();
    await screenshots('overview');
  });

  it('lists schedules in words with next runs in their zone and UTC, the hostile name as text', async () => {
    await page.goto(`${origin}/ops/schedules`);
    const nightly = page.locator('tr', { has: page.getByRole('link', { name: 'nightly', exact: true }) });
    await expect(nightly.textContent()).resolves.toContain('At 02:30 AM');
    await expect(nightly.locator('ol li').count()).resolves.toBe(5);
    await expect(nightly.locator('ol li').first().textContent()).resolves.toMatch(
      /^\d{4}-\d\d-\d\d 02:30:00 · 0[67]:30:00 UTC$/,
    );
    await expect(page.getByRole('link', { name: HOSTILE_NAME }).isVisible()).resolves.toBe(true);
    await expect(
      page.evaluate(() => (globalThis as unknown as { alerted?: boolean }).alerted),
    ).resolves.toBeUndefined();
    await screenshots('schedules');
  });

  it('pauses a schedule with a note from its row and the database shows it paused', async () => {
    await page.goto(`${origin}/ops/schedules`);
    const row = page.locator('tr', { has: page.getByRole('link', { name: 'nightly', exact: true }) });
    await row.getByRole('textbox', { name: 'Pause note for nightly' }).fill('vendor outage');
    await row.getByRole('button', { name: 'Pause' }).click();
    await waitFor(async () => !(await runner.getCronSchedule('nightly')).enabled);
    await row.getByRole('button', { name: 'Resume' }).waitFor();
    await expect(row.locator('.badge.st-paused').isVisible()).resolves.toBe(true);
  });

  it('shows a schedule ledger as a timeline of its slots', async () => {
    await page.goto(`${origin}/ops/schedules`);
    await page.getByRole('link', { name: 'nightly', exact: true }).click();
    await page.getByRole('list', { name: 'Ledger' }).waitFor();
    const slots = page.getByRole('list', { name: 'Ledger' }).locator('li');
    await expect(slots.count()).resolves.toBe(5);
    await expect(slots.first().textContent()).resolves.toContain('manual');
    await expect(page.getByRole('button', { name: 'Backfill' }).isVisible()).resolves.toBe(true);
    await expect(page.getByRole('button', { name: 'Delete' }).isVisible()).resolves.toBe(true);
    await screenshots('schedule-detail');
  });

  it('filters executions and finds the failed task in the DAG of a failed execution', async () => {
    await page.goto(`${origin}/ops/executions`);
    await expect(page.locator('[data-waiting]').allTextContents()).resolves.toEqual([
      'starts at 2099-01-01 00:00:00 UTC',
      `waiting for throttled/customer=${LONG_NAME} (1/1 active)`,
    ]);
    await screenshots('executions');
    await page.getByRole('combobox', { name: 'Status' }).selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/status=failed/);
    await expect(page.locator('tbody tr').count()).resolves.toBe(2);
    await page.getByRole('link', { name: failedId.slice(0, 8) }).click();
    const failedNode = page.locator('svg.dag g.node[data-status="failed"]');
    await failedNode.waitFor();
    await expect(failedNode.getAttribute('data-task')).resolves.toBe('load');
    await expect(page.locator('svg.dag g.node[data-status="completed"]').count()).resolves.toBe(3);
    await expect(page.locator('#task-load .error-msg').textContent()).resolves.toContain('warehouse refused the batch');
    await expect(page.locator('#task-load details.stack[open] pre').isVisible()).resolves.toBe(true);
    await expect(page.getByRole('button', { name: 'Retry' }).isVisible()).resolves.toBe(true);
    await screenshots('execution-detail');
  });

  it('shows a slot whose pipeline failed as failed in the ledger, and links the execution the pause note names', async () => {
    await page.goto(`${origin}/ops/schedules`);
    const row = page.locator('tr', { has: page.getByRole('link', { name: 'fragile-export', exact: true }) });
    await expect(row.locator('.note').textContent()).resolves.toBe(`paused after failure of execution ${fragileId}`);
    await row.getByRole('link', { name: 'fragile-export', exact: true }).click();
    const slot = page.getByRole('list', { name: 'Ledger' }).locator('li').first();
    await slot.waitFor();
    await expect(slot.getAttribute('data-status')).resolves.toBe('handed_off');
    await expect(slot.getAttribute('data-outcome')).resolves.toBe('failed');
    await expect(slot.locator('.badge').first().textContent()).resolves.toBe('failed');
    // Red, as a failed pipeline is everywhere else: the badge and the slot's dot.
    const red = await page.evaluate(() => {
      const g = globalThis as unknown as {
        getComputedStyle(el: unknown, pseudo?: string): { color: string; backgroundColor: string };
        document: { querySelector(s: string): unknown };
      };
      const li = g.document.querySelector('ol.timeline li');
      return [
        g.getComputedStyle(g.document.querySelector('ol.timeline li .badge')).color,
        g.getComputedStyle(li, '::before').backgroundColor,
      ];
    });
    expect(red).toEqual(['rgb(180, 35, 24)', 'rgb(180, 35, 24)']);
    await screenshots('schedule-failed');
    await page.locator('.note-panel').getByRole('link', { name: fragileId }).click();
    await page.waitForURL(new RegExp(`/ops/executions/${fragileId}$`));
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toContain('failed');
  });

  it('shows a skipped task as skipped with its reason, not as an error', async () => {
    await page.goto(`${origin}/ops/executions/${gatedId}`);
    const node = page.locator('svg.dag g.node[data-task="optional"]');
    await expect(node.getAttribute('data-status')).resolves.toBe('skipped');
    await expect(page.locator('#task-optional .skip-reason').textContent()).resolves.toBe(
      'Skipped: when returned false.',
    );
    await expect(page.locator('#task-optional .error-msg').count()).resolves.toBe(0);
    await expect(page.locator('.error-msg').count()).resolves.toBe(0);
    await screenshots('execution-skipped');
  });

  it('draws a map task as one node of the DAG, labelled with its count of items', async () => {
    await page.goto(`${origin}/ops/executions/${mappedId}`);
    const node = page.locator('svg.dag g.node[data-task="each"]');
    await expect(node.locator('text.sub').textContent()).resolves.toBe('3/3 items');
    await expect(page.locator('svg.dag g.node').count()).resolves.toBe(1);
    await screenshots('execution-map');
  });

  it('sends a signal from the Signal form of a waiting task, refusing a payload that is not JSON without sending it', async () => {
    await page.goto(`${origin}/ops/executions/${waitingId}`);
    const section = page.locator('#task-approval');
    await expect(section.locator('[data-signal-wait]').textContent()).resolves.toMatch(
      /^waiting for signal approved \(until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)$/,
    );
    await expect(section.getByLabel('Signal').inputValue()).resolves.toBe('approved');
    await screenshots('execution-waiting');
    await section.getByLabel('Payload').fill('{by: ada}');
    await section.getByRole('button', { name: 'Signal' }).click();
    const alert = page.locator('#flash [role="alert"]');
    await alert.waitFor();
    await expect(alert.textContent()).resolves.toMatch(/^Payload is not valid JSON \(.+\): nothing was sent\.$/);
    expect((await runner.getExecutionResult(waitingId)).status).toBe('running');
    await section.getByLabel('Payload').fill('{"by":"ada"}');
    await section.getByRole('button', { name: 'Signal' }).click();
    await page.locator('#flash [role="status"]', { hasText: 'Sent signal "approved".' }).waitFor();
    await waitFor(async () => (await runner.getExecutionResult(waitingId)).status === 'completed');
    expect((await runner.getExecutionResult(waitingId)).finalContext.approval).toEqual({ by: 'ada' });
  });

  it('shows a new occurrence on the open ledger page without reloading (SSE)', async () => {
    await page.goto(`${origin}/ops/schedules/ticker`);
    await page.locator('#live.on').waitFor();
    await expect(page.getByRole('list', { name: 'Ledger' }).count()).resolves.toBe(0);
    await page.evaluate(() => {
      (globalThis as unknown as { sameDocument: boolean }).sameDocument = true;
    });
    await runner.setCronScheduleEnabled('ticker', true);
    await page
      .getByRole('list', { name: 'Ledger' })
      .locator('li[data-status="handed_off"]')
      .first()
      .waitFor({ timeout: 30_000 });
    await expect(page.evaluate(() => (globalThis as unknown as { sameDocument?: boolean }).sameDocument)).resolves.toBe(
      true,
    );
    await runner.setCronScheduleEnabled('ticker', false);
  });

  it('shows the workflows and runners pages', async () => {
    for (const section of ['workflows', 'runners'] as const) {
      await page.goto(`${origin}/ops/`);
      const navLink = page
        .getByRole('navigation', { name: 'Sections' })
        .getByRole('link', { name: section, exact: false });
      await navLink.click();
      await page.getByRole('heading', { level: 1 }).waitFor();
      if (section === 'workflows') await expect(page.locator('tr[data-group]').count()).resolves.toBe(1);
      await screenshots(section);
    }
    await expect(page.locator('tbody tr').first().textContent()).resolves.toContain('etl');
  });

  it('adds a schedule through the form with overlap, pause on failure, max runs, DST and note', async () => {
    await page.goto(`${origin}/ops/schedules`);
    await page.getByText('Add a schedule').click();
    const form = page.locator('form.schedule-form');
    await form.getByLabel('Name').fill('guarded');
    await form.getByLabel('Cron expression').fill('30 2 * * *');
    await form.getByLabel('Time zone').fill('America/New_York');
    await form.getByLabel('Overlap').selectOption('buffer_all');
    // The option shows the policy's name only; the hint under it says what it does.
    await form
      .locator('label', { hasText: 'Overlap' })
      .locator('.choice-hint', { hasText: 'keep every one waiting, then run them one at a time, oldest first' })
      .waitFor();
    await form.getByLabel('Max runs').fill('4');
    await form.getByLabel('a repeated wall time').selectOption('last');
    await form.getByLabel('a wall time in a gap').selectOption('skip');
    await form.getByLabel('Note').fill('owned by the data team');
    await form.getByRole('checkbox', { name: 'Pause on failure' }).check();
    await screenshots('schedule-add');
    await form.getByRole('button', { name: 'Add schedule' }).click();
    await page.waitForURL(/\/ops\/schedules\/[0-9a-f-]{36}$/);
    expect(await runner.getCronSchedule('guarded')).toMatchObject({
      workflowName: 'etl',
      timezone: 'America/New_York',
      overlapPolicy: 'buffer_all',
      pauseOnFailure: true,
      maxRuns: 4,
      runCount: 0,
      dst: { repeated: 'last', gap: 'skip' },
      note: 'owned by the data team',
      enabled: true,
    });
    const definition = page.locator('dl.kv');
    await expect(definition.textContent()).resolves.toContain(
      'overlap buffer all · pauses on failure · DST: repeated last, gap skip',
    );
    await expect(definition.textContent()).resolves.toContain('0 of 4 scheduled runs');
    await expect(page.locator('.note-panel').textContent()).resolves.toContain('owned by the data team');
  });

  it('previews the next runs while an expression is typed, without reloading, showing an error as text', async () => {
    await page.goto(`${origin}/ops/schedules`);
    await page.evaluate(() => {
      (globalThis as unknown as { sameDocument: boolean }).sameDocument = true;
    });
    await page.getByText('Add a schedule').click();
    const form = page.locator('form.schedule-form');
    const preview = form.locator('[data-cron-preview]');
    await form.getByLabel('Time zone').fill('America/New_York');
    await form.getByLabel('Cron expression').pressSequentially('30 2 * * *', { delay: 15 });
    await preview.locator('ol li').nth(4).waitFor();
    await expect(preview.locator('p').first().textContent()).resolves.toBe(
      'At 02:30 AM · next runs in America/New_York and UTC',
    );
    await expect(preview.locator('ol li').first().textContent()).resolves.toMatch(
      /^\d{4}-\d\d-\d\d 02:30:00 · 0[67]:30:00 UTC$/,
    );
    await form.getByLabel('Cron expression').fill('15 0 12 * * ? 2099');
    await preview.locator('ol li', { hasText: '2099-01-01 12:00:15' }).waitFor();
    await form.getByLabel('Cron expression').fill('<img src=x> * * * *');
    await preview.locator('[data-state="error"], .error-msg').first().waitFor();
    await expect(preview.textContent()).resolves.toContain('Invalid cron expression "<img src=x> * * * *"');
    await expect(preview.locator('img').count()).resolves.toBe(0);
    await screenshots('schedule-preview');
    await form.getByLabel('Cron expression').fill('');
    await preview.locator('p.muted', { hasText: 'appear here as you type' }).waitFor();
    await expect(page.evaluate(() => (globalThis as unknown as { sameDocument?: boolean }).sameDocument)).resolves.toBe(
      true,
    );
  });

  it('edits a schedule through its form, and shows a refused value as text without saving it', async () => {
    await page.goto(`${origin}/ops/schedules/guarded`);
    await page.getByText('Edit schedule').click();
    const form = page.locator('form.schedule-form');
    // Opened, the form previews the schedule's own expression.
    await form.locator('[data-cron-preview] ol li').nth(4).waitFor();
    await expect(form.locator('[data-cron-preview] ol li').first().textContent()).resolves.toMatch(
      /^\d{4}-\d\d-\d\d 02:30:00 · 0[67]:30:00 UTC$/,
    );
    await expect(form.getByLabel('Max runs').inputValue()).resolves.toBe('4');
    await form.getByLabel('Overlap').selectOption('cancel_other');
    await form.getByLabel('Max runs').fill('');
    await form.getByLabel('a repeated wall time').selectOption('');
    await form.getByLabel('a wall time in a gap').selectOption('');
    await form.getByLabel('Note').fill('handed over to ops');
    await form.getByRole('checkbox', { name: 'Pause on failure' }).uncheck();
    await screenshots('schedule-edit');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await waitFor(async () => (await runner.getCronSchedule('guarded')).overlapPolicy === 'cancel_other');
    expect(await runner.getCronSchedule('guarded')).toMatchObject({
      pauseOnFailure: false,
      maxRuns: null,
      dst: null,
      note: 'handed over to ops',
    });
    await page.locator('dl.kv', { hasText: 'overlap cancel other' }).waitFor();
    await expect(page.locator('dl.kv').textContent()).resolves.toContain('0 scheduled runs');
    await expect(page.locator('.note-panel').textContent()).resolves.toContain('handed over to ops');

    const stored = await runner.getCronSchedule('guarded');
    await page.locator('#edit-schedule[open]').waitFor();
    await form.getByLabel('Cron expression').fill('<img src=x> 2 * * *');
    await form.getByRole('button', { name: 'Save changes' }).click();
    const alert = page.locator('#flash [role="alert"]');
    await alert.waitFor();
    await expect(alert.textContent()).resolves.toContain('Invalid cron expression "<img src=x> 2 * * *"');
    await expect(page.locator('#flash img').count()).resolves.toBe(0);
    expect(await runner.getCronSchedule('guarded')).toEqual(stored);
  });

  it('made no request outside the dashboard origin', () => {
    expect(requested.length).toBeGreaterThan(0);
    expect(requested.filter((url) => !url.startsWith(`${origin}/ops/`))).toEqual([]);
  });
});
