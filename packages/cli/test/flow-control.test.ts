import type { ConcurrencyGroupInfo, PipelineSummary } from '@orreryjs/core';
import { DefaultRunner, defineWorkflow, type PipelineExecution, type WorkflowInfo } from '@orreryjs/runner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../../test/support/processes.js';
import { cutStatus, STATUS_MIN_WIDTH } from '../src/flow-control-view.js';
import { orrery, orreryJson } from './support/cli.js';
import { migratedSqliteDatabase } from './support/database.js';

const database = migratedSqliteDatabase();
const env = { ORRERY_DATABASE_URL: database.url };
const run = (args: string[]) => orrery(args, { env });
const json = <T>(args: string[]) => orreryJson<T>(args, { env });

// A customer's pipelines one at a time; the first holds its slot until the tests are done.
let release: () => void = () => {};
const held = new Promise<void>((resolve) => {
  release = resolve;
});
const sync = defineWorkflow({
  name: 'sync',
  priority: 5,
  concurrency: { key: 'customer', limit: 1 },
  tasks: [{ id: 'pull', run: () => held }],
});
const later = defineWorkflow({ name: 'later', tasks: [{ id: 'go', run: () => {} }] });

const runAt = new Date('2099-01-01T00:00:00Z');
let runner: DefaultRunner;
let syncRuns: PipelineExecution[];
let laterRun: PipelineExecution;

// A real runner holds one pipeline of acme active and two queued; the CLI reads the same file.
beforeAll(async () => {
  runner = await DefaultRunner.create({
    database: database.url,
    workflows: [sync, later],
    enableCronScheduling: false,
    pollIntervalMs: 20,
  });
  await runner.start();
  syncRuns = [];
  for (let n = 0; n < 3; n += 1) syncRuns.push(await runner.executeAsync('sync', { customer: 'acme' }));
  laterRun = await runner.executeAsync('later', {}, { runAt });
  await until(
    'one sync running',
    () => runner.listExecutions({ workflowName: 'sync', status: 'running' }),
    (running) => running.length === 1,
  );
});
afterAll(async () => {
  release();
  await Promise.all(syncRuns.map((execution) => execution.wait()));
  await runner.shutdown();
  database.remove();
});

const queuedIds = () => syncRuns.slice(1).map((execution) => execution.id);

describe('orrery executions list, of pipelines that wait', () => {
  it('says what a queued pipeline waits for and when a delayed one starts, within 120 columns', () => {
    const table = run(['executions', 'list']);
    expect(table.status).toBe(0);
    const lines = table.stdout.split('\n');
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(120);
    for (const id of queuedIds()) {
      const line = lines.find((l) => l.startsWith(`│ ${id.slice(0, 8)} │`));
      // Cut in the group's name, if at all: the occupancy stays.
      expect(line).toMatch(/│ pending · waiting for sync\/\S+ \(1\/1 active\) +│/);
    }
    const laterLine = lines.find((l) => l.startsWith(`│ ${laterRun.id.slice(0, 8)} │`));
    expect(laterLine).toContain('pending · starts at 2099-01-01T00:00:00.000Z');
  });

  it('shows the reason whole with --wide', () => {
    const wide = run(['executions', 'list', '--wide']).stdout;
    expect(wide).toContain('pending · waiting for sync/customer=acme (1/1 active)');
    expect(wide).toContain('pending · starts at 2099-01-01T00:00:00.000Z');
  });

  it('gives JSON the raw waitingFor, runAt and priority', () => {
    const listed = json<PipelineSummary[]>(['executions', 'list']);
    const byId = new Map(listed.map((summary) => [summary.executionId, summary]));
    for (const id of queuedIds()) {
      expect(byId.get(id)).toMatchObject({
        status: 'pending',
        priority: 5,
        runAt: null,
        waitingFor: { kind: 'concurrency', group: 'sync/customer=acme', active: 1, limit: 1 },
      });
    }
    expect(byId.get(syncRuns[0]!.id)).toMatchObject({ status: 'running', waitingFor: null });
    expect(byId.get(laterRun.id)).toMatchObject({
      priority: 0,
      runAt: runAt.toISOString(),
      waitingFor: { kind: 'runAt', runAt: runAt.toISOString() },
    });
  });
});

describe('cutStatus', () => {
  const reason = 'pending · waiting for sync/customer=acme-industries (2/2 active)';

  it("cuts the group's name and keeps the occupancy", () => {
    expect(cutStatus(reason, 44)).toBe('pending · waiting for sync/cus… (2/2 active)');
  });

  it("cuts the end when the occupancy would leave no room for the reason, and never a delayed start's middle", () => {
    expect(cutStatus(reason, STATUS_MIN_WIDTH)).toBe('pending · waiting for …');
    expect(cutStatus('pending · starts at 2099-01-01T00:00:00.000Z', 31)).toBe('pending · starts at 2099-01-01…');
  });
});

describe('orrery executions show, of a pipeline that waits', () => {
  it('prints its priority and why it waits', () => {
    const shown = run(['executions', 'show', queuedIds()[0]!.slice(0, 8)]);
    expect(shown.status).toBe(0);
    expect(shown.stdout).toMatch(/│ Status +│ pending · waiting for sync\/customer=acme \(1\/1 active\) +│/);
    expect(shown.stdout).toMatch(/│ Priority +│ 5 +│/);
    expect(run(['executions', 'show', laterRun.id]).stdout).toContain('pending · starts at 2099-01-01T00:00:00.000Z');
  });

  it('adds runAt, priority and waitingFor to the JSON result', () => {
    const shown = json<Record<string, unknown>>(['executions', 'show', laterRun.id]);
    expect(shown).toMatchObject({
      executionId: laterRun.id,
      priority: 0,
      runAt: runAt.toISOString(),
      waitingFor: { kind: 'runAt', runAt: runAt.toISOString() },
    });
  });
});

describe('orrery workflows', () => {
  it('lists each workflow with its priority and concurrency rules, also as `workflows list`', () => {
    for (const args of [['workflows'], ['workflows', 'list']]) {
      const table = run(args);
      expect(table.status, args.join(' ')).toBe(0);
      expect(table.stdout).toMatch(/│ sync .*│ 5 +│ 1 at a time per customer +│/);
      expect(table.stdout).toMatch(/│ later .*│ 0 +│ - +│/);
    }
    const listed = json<WorkflowInfo[]>(['workflows', 'list']);
    expect(listed.find((w) => w.name === 'sync')).toMatchObject({
      priority: 5,
      concurrency: [{ key: 'customer', limit: 1, onLimit: 'queue' }],
    });
  });

  it('lists the occupancy of concurrency groups, of every workflow or of one', () => {
    const acme = { group: 'sync/customer=acme', workflowName: 'sync', active: 1, queued: 2, limit: 1 };
    expect(json<ConcurrencyGroupInfo[]>(['workflows', 'groups'])).toEqual([acme]);
    expect(json<ConcurrencyGroupInfo[]>(['workflows', 'groups', 'sync'])).toEqual([acme]);
    expect(json<ConcurrencyGroupInfo[]>(['workflows', 'groups', 'later'])).toEqual([]);
    const table = run(['workflows', 'groups', 'sync']);
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/│ sync\/customer=acme │ sync +│ 1 \/ 1 +│ 2 +│/);
    expect(run(['workflows', 'groups', 'later']).stdout).toBe('No concurrency group has unfinished executions.\n');
  });
});
