import { DefaultRunner, defineWorkflow, ManualClock } from '@orreryjs/runner';
import { afterEach, describe, expect, it } from 'vitest';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import { type MetricsServer, serveMetrics } from '../src/metrics-server.js';

let server: MetricsServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function get(port: number, path: string): Promise<{ status: number; type: string | null; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, type: response.headers.get('content-type'), body: await response.text() };
}

describe('serveMetrics', () => {
  it('serves the text metrics() resolves with at /metrics, in the Prometheus format', async () => {
    const runner = {
      calls: 0,
      health: async () => ({ status: 'ok' }),
      async metrics() {
        this.calls += 1;
        return `orrery_calls ${this.calls}\n`;
      },
    };
    server = await serveMetrics(runner, 0, '127.0.0.1');
    expect(server).not.toBeNull();
    const first = await get(server!.port, '/metrics');
    expect(first).toEqual({ status: 200, type: 'text/plain; version=0.0.4; charset=utf-8', body: 'orrery_calls 1\n' });
    expect((await get(server!.port, '/metrics')).body).toBe('orrery_calls 2\n');
    expect((await get(server!.port, '/')).status).toBe(404);
  });

  it('serves health() as JSON at /health: 200 when ok or degraded, 503 only when unhealthy', async () => {
    let status = 'ok';
    server = await serveMetrics(
      { metrics: async () => '', health: async () => ({ status, lostOccurrences: 0 }) },
      0,
      '127.0.0.1',
    );
    expect(await get(server.port, '/health')).toEqual({
      status: 200,
      type: 'application/json',
      body: '{"status":"ok","lostOccurrences":0}\n',
    });
    status = 'degraded';
    const degraded = await get(server.port, '/health');
    expect(degraded.status).toBe(200);
    expect(JSON.parse(degraded.body)).toMatchObject({ status: 'degraded' });
    status = 'unhealthy';
    const unhealthy = await get(server.port, '/health');
    expect(unhealthy.status).toBe(503);
    expect(JSON.parse(unhealthy.body)).toMatchObject({ status: 'unhealthy' });
  });

  it('answers 200 for a real runner with a schedule no live runner can run, listing it in the body', async () => {
    const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
    const file = tempSqliteFile();
    const database = `sqlite:${file.filename}`;
    const orphan = defineWorkflow({ name: 'orphan', tasks: [{ id: 'only', run: () => {} }] });
    const ping = defineWorkflow({ name: 'ping', tasks: [{ id: 'only', run: () => {} }] });
    // A runner that had the workflow added a schedule for it, and is gone.
    const gone = await DefaultRunner.create({ database, clock, workflows: [orphan], enableCronScheduling: false });
    await gone.addCronSchedule({ name: 'stale', workflowName: 'orphan', cronExpression: '0 * * * *' });
    await gone.shutdown();
    const runner = await DefaultRunner.create({ database, clock, workflows: [ping], cronEnableRecovery: false });
    try {
      await runner.start();
      server = await serveMetrics(runner, 0, '127.0.0.1');
      clock.set(new Date('2026-01-01T01:05:00Z')); // due at 01:00, past the 60 s lost threshold
      const health = await get(server.port, '/health');
      expect(health.status).toBe(200);
      expect(JSON.parse(health.body)).toMatchObject({
        status: 'ok',
        strandedSchedules: [{ name: 'stale', workflowName: 'orphan', nextRunAt: '2026-01-01T01:00:00.000Z' }],
      });
      expect((await get(server.port, '/metrics')).body).toContain('\norrery_schedules_stranded 1\n');
    } finally {
      await server?.close();
      server = undefined;
      await runner.shutdown();
      file.remove();
    }
  });

  it('answers 500 with the reason when metrics() fails', async () => {
    server = await serveMetrics(
      { metrics: () => Promise.reject(new Error('registry closed')), health: async () => ({ status: 'ok' }) },
      0,
      '127.0.0.1',
    );
    const response = await get(server!.port, '/metrics');
    expect(response.status).toBe(500);
    expect(response.body).toContain('registry closed');
  });

  it('refuses a port that is taken with a ConfigurationError', async () => {
    const source = { metrics: async () => '', health: async () => ({ status: 'ok' }) };
    server = await serveMetrics(source, 0, '127.0.0.1');
    await expect(serveMetrics(source, server!.port, '127.0.0.1')).rejects.toMatchObject({
      code: 'CONFIGURATION',
    });
  });
});
