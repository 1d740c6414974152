import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  DefaultRunner,
  type DefaultRunnerConfig,
  defineWorkflow,
  ExecutionNotFoundError,
  ManualClock,
  OrreryClient,
  type OrreryClientConfig,
  RUNNER_ALIVE_WINDOW_MS,
  RUNNER_FORGOTTEN_AFTER_MS,
  ValidationError,
  WorkflowNotFoundError,
} from '../src/index.js';
import { ADAPTERS, type TestDatabase } from './support.js';

const T0 = new Date('2026-03-01T12:00:00.000Z');
const reportV1 = defineWorkflow({
  name: 'report',
  description: 'first version',
  tasks: [{ id: 'extract', run: () => {} }],
});
const reportV2 = defineWorkflow({
  name: 'report',
  description: 'second version',
  tasks: [
    { id: 'extract', run: () => {} },
    { id: 'publish', dependsOn: ['extract'], retry: { maxAttempts: 7 }, timeoutMs: 5_000, run: () => {} },
  ],
});
const audit = defineWorkflow({ name: 'audit', tasks: [{ id: 'check', when: () => true, run: () => {} }] });

describe('OrreryClient configuration', () => {
  it.each<[string, OrreryClientConfig, RegExp]>([
    ['a runner-only option', { workflows: [audit] } as OrreryClientConfig, /"workflows" is not an OrreryClient option/],
    ['a misspelt option', { databse: 'sqlite::memory:' } as OrreryClientConfig, /"databse" is not an OrreryClient/],
    ['a bad schema name', { schema: 'Bad-Name' }, /Schema name/],
  ])('refuses %s with a ConfigurationError naming it', async (_label, config, message) => {
    const created = OrreryClient.create({ database: 'sqlite::memory:', ...config });
    await expect(created).rejects.toBeInstanceOf(ConfigurationError);
    await expect(created).rejects.toThrow(message);
  });
});

describe('OrreryClient mustExist (SQLite)', () => {
  const folder = mkdtempSync(join(tmpdir(), 'orrery-must-exist-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it("with 'file', refuses a missing database file naming it, and creates nothing", async () => {
    const path = join(folder, 'typo', 'b.db');
    const created = OrreryClient.create({ database: `sqlite:${path}`, mustExist: 'file' });
    await expect(created).rejects.toBeInstanceOf(ConfigurationError);
    await expect(created).rejects.toThrow(`SQLite database "${path}" does not exist`);
    expect(existsSync(join(folder, 'typo'))).toBe(false);
  });

  it("with 'folder', refuses a missing folder but creates a missing file in an existing one", async () => {
    const created = OrreryClient.create({ database: `sqlite:${join(folder, 'nope', 'c.db')}`, mustExist: 'folder' });
    await expect(created).rejects.toThrow(/folder of SQLite database .* does not exist/);
    expect(existsSync(join(folder, 'nope'))).toBe(false);
    const client = await OrreryClient.create({ database: `sqlite:${join(folder, 'c.db')}`, mustExist: 'folder' });
    await client.close();
    expect(existsSync(join(folder, 'c.db'))).toBe(true);
  });

  it('refuses a mustExist that is not file or folder', async () => {
    const created = OrreryClient.create({ database: 'sqlite::memory:', mustExist: 'yes' as never });
    await expect(created).rejects.toThrow(/mustExist must be 'file' or 'folder'/);
  });
});

describe.each(ADAPTERS)('OrreryClient on $name', (adapter) => {
  let db: TestDatabase;
  let clock: ManualClock;
  const opened: Array<{ close(): Promise<void> }> = [];
  const runner = async (config: DefaultRunnerConfig) => {
    const created = await DefaultRunner.create({ ...db.config, clock, enableCronScheduling: false, ...config });
    opened.push(created);
    return created;
  };
  const client = async () => {
    const created = await OrreryClient.create({ ...db.config, clock });
    opened.push(created);
    return created;
  };

  beforeEach(() => {
    db = adapter.open();
    clock = new ManualClock(T0);
  });
  afterEach(async () => {
    for (const each of opened.splice(0).reverse()) await each.close();
    await db.remove();
  });

  it('lists the workflows runners stored, each version with its definition, and when one was last seen', async () => {
    await runner({ workflows: [reportV1, audit] });
    clock.advance(1_000);
    const second = await runner({ workflows: [reportV2] });
    clock.advance(5_000);
    await second.start(); // the heartbeat moves lastSeenAt of the workflows it has
    const workflows = await (await client()).listWorkflows();
    expect(workflows.map((w) => [w.name, w.version, w.registeredAt, w.lastSeenAt])).toEqual([
      ['audit', audit.version, T0, T0],
      ['report', reportV1.version, T0, T0],
      ['report', reportV2.version, new Date(T0.getTime() + 1_000), new Date(T0.getTime() + 6_000)],
    ]);
    expect(workflows[2]).toMatchObject({
      description: 'second version',
      tasks: [
        { id: 'extract', dependsOn: [], trigger: 'all_success', timeoutMs: null, hasWhen: false },
        {
          id: 'publish',
          dependsOn: ['extract'],
          retry: { maxAttempts: 7, backoff: 'exponential', initialDelayMs: 1000, maxDelayMs: 60_000, jitter: true },
          timeoutMs: 5_000,
        },
      ],
    });
    expect(workflows[0]!.tasks[0]!.hasWhen).toBe(true);
  });

  it('starts the latest registered version of a name, with task rows from its stored definition', async () => {
    await runner({ workflows: [reportV1] });
    clock.advance(1_000);
    await runner({ workflows: [reportV2] });
    const c = await client();
    const execution = await c.executeAsync('report', { day: '2026-03-01' });
    const result = await c.getExecutionResult(execution.id);
    expect(result).toMatchObject({ workflowName: 'report', workflowVersion: reportV2.version, status: 'pending' });
    expect(result.tasks.map((t) => [t.taskId, t.status])).toEqual([
      ['extract', 'ready'],
      ['publish', 'not_started'],
    ]);
  });

  it('picks up a version registered after it started one, once its short cache of the latest version lapses', async () => {
    await runner({ workflows: [reportV1] });
    const c = await client();
    expect((await c.getExecutionResult((await c.executeAsync('report')).id)).workflowVersion).toBe(reportV1.version);
    clock.advance(1_000);
    await runner({ workflows: [reportV2] });
    let version = reportV1.version;
    for (let tries = 0; version !== reportV2.version && tries < 100; tries += 1) {
      await new Promise((done) => setTimeout(done, 100));
      version = (await c.getExecutionResult((await c.executeAsync('report')).id)).workflowVersion;
    }
    expect(version).toBe(reportV2.version);
  });

  it('refuses an unknown workflow name with WorkflowNotFoundError naming the known ones, writing nothing', async () => {
    const c = await client();
    await expect(c.executeAsync('report')).rejects.toThrow(/no runner has registered any workflow yet/);
    await runner({ workflows: [reportV1, audit] });
    const attempts = [
      c.executeAsync('reprot', {}),
      c.execute('reprot'),
      c.addCronSchedule({ name: 's', workflowName: 'reprot', cronExpression: '0 * * * *' }),
    ];
    // Settled together: awaiting them one by one leaves the later rejections unhandled for a while.
    const errors = await Promise.all(
      attempts.map((attempt) =>
        attempt.then(
          () => undefined,
          (error: unknown) => error,
        ),
      ),
    );
    for (const error of errors) {
      expect(error).toBeInstanceOf(WorkflowNotFoundError);
      expect((error as Error).message).toMatch(/"reprot" .*known: audit, report/);
    }
    expect(await c.listExecutions()).toEqual([]);
    expect(await c.listCronSchedules()).toEqual([]);
  });

  it('starts many pipelines in request order with executeAsyncMany, keys working as in executeAsync', async () => {
    await runner({ workflows: [reportV2, audit] });
    const c = await client();
    const earlier = await c.executeAsync('audit', { n: -1 }, { idempotencyKey: 'taken' });
    const executions = await c.executeAsyncMany([
      { workflowName: 'report', context: { n: 0 } },
      { workflowName: 'audit', context: { n: 1 }, options: { idempotencyKey: 'taken' } },
      { workflowName: 'report', context: { n: 2 }, options: { idempotencyKey: 'batch' } },
      { workflowName: 'report', context: { n: 3 }, options: { idempotencyKey: 'batch' } },
      { workflowName: 'audit' },
    ]);
    expect(executions.map((e) => e.workflowName)).toEqual(['report', 'audit', 'report', 'report', 'audit']);
    expect(executions[1]!.id).toBe(earlier.id);
    expect(executions[3]!.id).toBe(executions[2]!.id);
    const results = await Promise.all(executions.map((e) => c.getExecutionResult(e.id)));
    expect(results.map((r) => r.finalContext)).toEqual([{ n: 0 }, { n: -1 }, { n: 2 }, { n: 2 }, {}]);
    expect(results[0]!.tasks.map((t) => [t.taskId, t.status])).toEqual([
      ['extract', 'ready'],
      ['publish', 'not_started'],
    ]);
    expect(await c.listExecutions()).toHaveLength(4);
    expect(await c.executeAsyncMany([])).toEqual([]);
  });

  it('starts each key once when two clients send the same keys to executeAsyncMany in opposite orders', async () => {
    await runner({ workflows: [audit] });
    const clients = [await client(), await client()];
    const rounds = 50;
    const rejected: string[] = [];
    const idsByKey = new Map<string, Set<string>>();
    for (let round = 0; round < rounds; round++) {
      const keys = Array.from({ length: 10 }, (_, i) => `round-${round}-key-${i}`);
      const orders = [keys, [...keys].reverse()];
      // Together, so that the two transactions overlap (on Postgres they used to deadlock: 40P01).
      const outcomes = await Promise.allSettled(
        clients.map((c, i) =>
          c.executeAsyncMany(
            orders[i]!.map((idempotencyKey) => ({ workflowName: 'audit', options: { idempotencyKey } })),
          ),
        ),
      );
      for (const [i, outcome] of outcomes.entries()) {
        if (outcome.status === 'rejected') {
          rejected.push(String(outcome.reason));
          continue;
        }
        for (const [index, execution] of outcome.value.entries()) {
          const key = orders[i]![index]!;
          idsByKey.set(key, (idsByKey.get(key) ?? new Set()).add(execution.id));
        }
      }
    }
    expect(rejected).toEqual([]);
    expect(idsByKey.size).toBe(rounds * 10);
    expect([...idsByKey.values()].every((ids) => ids.size === 1)).toBe(true);
    expect(await clients[0]!.listExecutions({ limit: 1000 })).toHaveLength(rounds * 10);
  });

  it('refuses a whole executeAsyncMany batch with bad input anywhere, writing nothing', async () => {
    await runner({ workflows: [reportV1, audit] });
    const c = await client();
    await c.executeAsync('audit', {}, { idempotencyKey: 'audit-key' });
    const good = { workflowName: 'report', context: { ok: true } };
    const refusals: Array<[unknown, RegExp]> = [
      [{ workflowName: 'reprot' }, /"reprot" .*known: audit, report/],
      [{ workflowName: 'report', context: [1] }, /plain object/],
      [{ workflowName: 'report', options: { idempotencyKey: '' } }, /idempotencyKey must be a non-empty string/],
      [{ workflowName: 'report', options: { idempotencyKey: 'audit-key' } }, /already belongs to execution/],
      [null, /request 1 must be an object/],
    ];
    for (const [bad, message] of refusals) {
      await expect(c.executeAsyncMany([good, bad as never, good])).rejects.toThrow(message);
    }
    await expect(
      c.executeAsyncMany([
        { workflowName: 'report', options: { idempotencyKey: 'both' } },
        { workflowName: 'audit', options: { idempotencyKey: 'both' } },
      ]),
    ).rejects.toThrow(/"both" is given for workflow "report" and, in request 1, for "audit"/);
    await expect(c.executeAsyncMany('report' as never)).rejects.toBeInstanceOf(ValidationError);
    expect((await c.listExecutions()).map((e) => e.workflowName)).toEqual(['audit']);
  });

  it('manages, triggers and backfills schedules of any workflow in the table', async () => {
    await runner({ workflows: [reportV1] });
    const c = await client();
    const schedule = await c.addCronSchedule({ name: 'hourly', workflowName: 'report', cronExpression: '0 * * * *' });
    expect(await c.getCronSchedule('hourly')).toEqual(schedule);
    const fired = await c.triggerCronSchedule('hourly');
    expect(fired.workflowName).toBe('report');
    const past = { start: new Date(T0.getTime() - 3 * 3_600_000), end: T0 };
    expect(await c.backfillCronSchedule('hourly', past)).toEqual({ created: 3, existing: 0 });
    expect(await c.listExecutions()).toHaveLength(4);
    await c.deleteCronSchedule('hourly');
    expect(await c.listCronSchedules()).toEqual([]);
  });

  it('lists live runners, hides stopped ones unless asked, and calls a silent one dead', async () => {
    const first = await runner({ runnerId: 'first', workflows: [reportV1] });
    const second = await runner({ runnerId: 'second', workflows: [audit] });
    await first.start();
    await second.start();
    const c = await client();
    expect(await c.listRunners()).toEqual([
      expect.objectContaining({ id: 'first', workflows: ['report'], alive: true, stoppedAt: null, pid: process.pid }),
      expect.objectContaining({ id: 'second', workflows: ['audit'], alive: true, stoppedAt: null }),
    ]);
    await second.shutdown();
    expect((await c.listRunners()).map((r) => r.id)).toEqual(['first']);
    expect(await c.listRunners({ includeStopped: true })).toEqual([
      expect.objectContaining({ id: 'first', alive: true }),
      expect.objectContaining({ id: 'second', alive: false, stoppedAt: T0 }),
    ]);
    clock.advance(RUNNER_ALIVE_WINDOW_MS + 1); // no heartbeat has been written since
    expect(await c.listRunners()).toEqual([expect.objectContaining({ id: 'first', alive: false })]);
    // Silent for more than a day: out of the default list, still there when asked for.
    clock.advance(RUNNER_FORGOTTEN_AFTER_MS);
    expect(await c.listRunners()).toEqual([]);
    expect((await c.listRunners({ includeStopped: true })).map((r) => [r.id, r.alive])).toEqual([
      ['first', false],
      ['second', false],
    ]);
    await expect(c.listRunners({ includeStopped: 'yes' as never })).rejects.toBeInstanceOf(ValidationError);
  });

  it('refuses a backfill starting before the cron ledger retention, and writes nothing', async () => {
    await runner({ workflows: [reportV1] });
    const DAY = 86_400_000;
    const c = await OrreryClient.create({ ...db.config, clock, retention: { cronLedgerMs: 10 * DAY } });
    opened.push(c);
    await c.addCronSchedule({ name: 'hourly', workflowName: 'report', cronExpression: '0 * * * *' });
    const old = { start: new Date(T0.getTime() - 11 * DAY), end: new Date(T0.getTime() - 11 * DAY + 3_600_000) };
    const refused = c.backfillCronSchedule('hourly', old);
    await expect(refused).rejects.toBeInstanceOf(ValidationError);
    await expect(refused).rejects.toThrow(/older than the cron ledger's retention \(10 days/);
    expect(await c.getCronExecutionHistory('hourly')).toEqual([]);
    const recent = { start: new Date(T0.getTime() - 9 * DAY), end: new Date(T0.getTime() - 9 * DAY + 3_600_000) };
    expect(await c.backfillCronSchedule('hourly', recent)).toEqual({ created: 1, existing: 0 });
  });

  it('resolves an execution id from a unique prefix of 8 or more hex digits, and no other text', async () => {
    await runner({ workflows: [reportV1] });
    const c = await client();
    const { id } = await c.executeAsync('report');
    for (const given of [id, id.slice(0, 8), id.slice(0, 13), id.slice(0, 19).toUpperCase(), id.replaceAll('-', '')]) {
      expect(await c.resolveExecutionId(given), given).toBe(id);
    }
    const other = id.startsWith('0') ? '1' : '0';
    for (const given of [id.slice(0, 7), `${other}${id.slice(1, 8)}`, `${id.slice(0, 8)}x`, `${id.slice(0, 7)}-`, '']) {
      await expect(c.resolveExecutionId(given), given).rejects.toBeInstanceOf(ExecutionNotFoundError);
    }
  });

  it('refuses calls after close()', async () => {
    const c = await client();
    await c.close();
    await c.close();
    await expect(c.listWorkflows()).rejects.toBeInstanceOf(ConfigurationError);
    await expect(c.executeAsync('report')).rejects.toThrow(/closed/);
  });
});
