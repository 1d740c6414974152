import { type ChildProcess, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { PipelineResult } from '@orreryjs/core';
import { DefaultRunner } from '@orreryjs/runner';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { flaky, report } from './fixtures/workflows.js';
import { expectOneLineError, FIXTURE_WORKFLOWS, orrery, orreryJson, startOrrery } from './support/cli.js';
import { migratedSqliteDatabase } from './support/database.js';

const database = migratedSqliteDatabase();
const env = { ORRERY_DATABASE_URL: database.url };
const NO_WORKFLOWS = fileURLToPath(new URL('./fixtures/no-workflows.ts', import.meta.url));
const BIN = fileURLToPath(new URL('../bin/orrery.js', import.meta.url));

/** A worker process and everything it printed so far. */
interface Worker {
  process: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

const running: Worker[] = [];
afterEach(() => {
  // A worker left running is a failed test; kill it by its own pid so the next test starts clean.
  const leftover = running.filter((w) => w.process.exitCode === null && w.process.signalCode === null);
  for (const worker of leftover) worker.process.kill('SIGKILL');
  running.length = 0;
  expect(leftover).toHaveLength(0);
});
afterAll(() => database.remove());

function startWorker(args: string[]): Worker {
  const child = startOrrery(['worker', FIXTURE_WORKFLOWS, ...args], { env });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const worker = { process: child, stdout: () => out, stderr: () => err, exited };
  running.push(worker);
  return worker;
}

/** Waits for a condition by polling; the test's timeout bounds the wait. */
async function until<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  what: string,
  worker?: Worker,
): Promise<T> {
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (worker !== undefined && worker.process.exitCode !== null) {
      throw new Error(`worker exited (${worker.process.exitCode}) while waiting for ${what}: ${worker.stderr()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function events(worker: Worker): Array<Record<string, unknown> & { event: string }> {
  return worker
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

describe('orrery worker', () => {
  it('runs queued pipelines, reports events as JSON lines, and stops gracefully on SIGTERM', async () => {
    const worker = startWorker([
      '--json',
      '--metrics-port',
      '0',
      '--metrics-host',
      '127.0.0.1',
      '--runner-id',
      'cli-test',
    ]);
    const started = await until(() => events(worker).find((e) => e.event === 'worker:started'), 'start', worker);
    expect(started).toMatchObject({ workflows: 'flaky,ping,report', cron: true, runnerId: 'cli-test' });

    // Queue a pipeline from another process, as an application would; only the worker runs it.
    const producer = await DefaultRunner.create({
      database: database.url,
      workflows: [report],
      enableCronScheduling: false,
    });
    const { id: executionId } = await producer.executeAsync('report', { batch: 1 });
    await producer.shutdown();

    const done = await until(
      () => {
        const result = orreryJson<PipelineResult>(['executions', 'show', executionId], { env });
        return result.status === 'completed' ? result : undefined;
      },
      'the queued pipeline to complete',
      worker,
    );
    expect(done.tasks.map((t) => t.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    const completed = await until(
      () => events(worker).find((e) => e.event === 'pipeline:completed'),
      'pipeline:completed',
      worker,
    );
    expect(completed).toMatchObject({ executionId });
    expect(String(started.metrics)).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const metrics = await fetch(String(started.metrics));
    expect(metrics.status).toBe(200);
    const health = await fetch(String(started.metrics).replace('/metrics', '/health'));
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok' });
    expect(await metrics.text()).toContain('orrery_pipelines_finished_total{workflow="report",status="completed"} 1');

    worker.process.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(
      events(worker)
        .map((e) => e.event)
        .slice(-2),
    ).toEqual(['worker:stopping', 'worker:stopped']);
    expect(events(worker).find((e) => e.event === 'worker:stopping')).toMatchObject({ signal: 'SIGTERM' });
  });

  it('logs JSON lines when its output is not a terminal, readable lines with --log-format pretty', async () => {
    const plain = startWorker(['--no-cron', '--quiet']);
    const started = await until(() => events(plain).find((e) => e.event === 'worker:started'), 'start', plain);
    expect(started).toMatchObject({ level: 30, msg: 'worker:started', cron: false, workflows: 'flaky,ping,report' });
    expect(Number.isNaN(Date.parse(String(started.time)))).toBe(false);
    plain.process.kill('SIGINT');
    expect(await plain.exited).toBe(0);

    const pretty = startWorker(['--no-cron', '--quiet', '--log-format', 'pretty']);
    await until(() => (pretty.stdout().includes('worker:started') ? true : undefined), 'start', pretty);
    expect(pretty.stdout()).toMatch(/^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} [+-]\d{4}\] INFO: worker:started\n/);
    expect(pretty.stdout()).toContain('workflows: "flaky,ping,report"');
    pretty.process.kill('SIGINT');
    expect(await pretty.exited).toBe(0);
    expect(pretty.stdout()).toMatch(/INFO: worker:stopping\n\s+signal: "SIGINT"/);
    expect(pretty.stdout()).not.toMatch(/^\{/m);
  });

  it("logs a failing task's stack, as a warning while it will retry", async () => {
    const worker = startWorker(['--json', '--no-cron']);
    await until(() => events(worker).find((e) => e.event === 'worker:started'), 'start', worker);
    const producer = await DefaultRunner.create({
      database: database.url,
      workflows: [flaky],
      enableCronScheduling: false,
    });
    const { id: executionId } = await producer.executeAsync('flaky');
    await producer.shutdown();
    const failed = await until(
      () => events(worker).find((e) => e.event === 'task:failed' && e.executionId === executionId),
      'task:failed',
      worker,
    );
    expect(failed).toMatchObject({ level: 40, taskId: 'wobble', willRetry: true });
    const err = failed.err as { message: string; stack: string };
    expect(err.message).toBe('first attempt fails');
    expect(err.stack).toMatch(/^Error: first attempt fails\n\s+at .*workflows\.ts/);
    worker.process.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });

  it('refuses a metrics port out of range and an unknown log level as usage errors', () => {
    expectOneLineError(orrery(['worker', FIXTURE_WORKFLOWS, '--metrics-port', '99999'], { env }), 2, '0 to 65535');
    expectOneLineError(orrery(['worker', FIXTURE_WORKFLOWS, '--log-level', 'loud'], { env }), 2, 'trace, debug');
  });

  it('hints at tsx or compiling when node cannot load a TypeScript module', () => {
    // The compiled CLI in plain node, without a TypeScript loader.
    const run = spawnSync(process.execPath, [BIN, 'worker', FIXTURE_WORKFLOWS], {
      env: { ...process.env, ORRERY_DATABASE_URL: database.url },
      encoding: 'utf8',
      timeout: 60_000,
    });
    const line = expectOneLineError(
      { status: run.status, stdout: run.stdout, stderr: run.stderr },
      1,
      'Unknown file extension',
    );
    expect(line).toContain('node --import tsx');
    expect(line).toContain('compile');
  });

  it('fires cron schedules while it runs', async () => {
    // The workers started above stored their workflows: adding a schedule needs no module.
    orreryJson(['schedules', 'add', 'ping', '* * * * * *', '--name', 'every-second', '--catchup', 'skip'], { env });
    const worker = startWorker(['--json']);
    const fired = await until(() => events(worker).find((e) => e.event === 'cron:fired'), 'cron:fired', worker);
    expect(typeof fired.scheduledTime).toBe('string');
    worker.process.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    orreryJson(['schedules', 'delete', 'every-second'], { env });
    const history = orreryJson<Array<{ source: string; status: string }>>(
      ['schedules', 'history', fired.scheduleId as string],
      { env },
    );
    expect(history.some((row) => row.source === 'schedule' && row.status === 'handed_off')).toBe(true);
  });

  it('refuses a missing module, a module without workflows, and no module at all', () => {
    expectOneLineError(orrery(['worker', 'missing-workflows.js'], { env }), 1, 'missing-workflows.js');
    expectOneLineError(orrery(['worker', NO_WORKFLOWS], { env }), 1, 'exports no workflow');
    expectOneLineError(orrery(['worker'], { env }), 2, "missing required argument 'module'");
    expectOneLineError(orrery(['worker', FIXTURE_WORKFLOWS, '--shutdown-timeout', 'soon'], { env }), 2, 'duration');
  });
});
