import { afterEach, describe, expect, it } from 'vitest';
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

  it('serves health() as JSON at /health: 200 when ok, 503 when degraded or stopped', async () => {
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
    expect(degraded.status).toBe(503);
    expect(JSON.parse(degraded.body)).toMatchObject({ status: 'degraded' });
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
