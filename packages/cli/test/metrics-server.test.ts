import { afterEach, describe, expect, it } from 'vitest';
import { type MetricsServer, serveMetrics } from '../src/metrics-server.js';

let server: MetricsServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function get(port: number, path: string): Promise<{ status: number; type: string | null; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, type: response.headers.get('content-type'), body: await response.text() };
}

describe('serveMetrics', () => {
  it('returns null when the runner has no metrics() method', async () => {
    expect(await serveMetrics({}, 0, '127.0.0.1')).toBeNull();
  });

  it('serves the text metrics() resolves with at /metrics, in the Prometheus format', async () => {
    const runner = {
      calls: 0,
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

  it('serves a prom-client style registry with its own content type', async () => {
    const registry = { contentType: 'application/openmetrics-text', metrics: async () => 'orrery_up 1\n' };
    server = await serveMetrics({ metrics: () => registry }, 0, '127.0.0.1');
    expect(await get(server!.port, '/metrics')).toEqual({
      status: 200,
      type: 'application/openmetrics-text',
      body: 'orrery_up 1\n',
    });
  });

  it('answers 500 with the reason when metrics() fails', async () => {
    server = await serveMetrics({ metrics: () => 42 }, 0, '127.0.0.1');
    const response = await get(server!.port, '/metrics');
    expect(response.status).toBe(500);
    expect(response.body).toContain('neither text nor a registry');
  });

  it('refuses a port that is taken with a ConfigurationError', async () => {
    server = await serveMetrics({ metrics: () => '' }, 0, '127.0.0.1');
    await expect(serveMetrics({ metrics: () => '' }, server!.port, '127.0.0.1')).rejects.toMatchObject({
      code: 'CONFIGURATION',
    });
  });
});
