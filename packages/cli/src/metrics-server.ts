import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigurationError } from '@orrery/core';

/** Prometheus' text exposition format, what prom-client's default registry produces. */
const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A running `/metrics` endpoint. */
export interface MetricsServer {
  /** The port it listens on (the one picked by the system when asked for 0). */
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` from `source.metrics()` when the runner offers that method, and
 * returns null when it does not (older runners), so the caller can say so. `metrics()` may
 * return the exposition text (or a promise of it) or a prom-client `Registry`.
 * @throws ConfigurationError when the port cannot be bound.
 */
export async function serveMetrics(source: object, port: number, host: string): Promise<MetricsServer | null> {
  const metrics = (source as { metrics?: unknown }).metrics;
  if (typeof metrics !== 'function') return null;
  const read = async (): Promise<{ body: string; contentType: string }> => {
    const produced: unknown = await metrics.call(source);
    if (typeof produced === 'string') return { body: produced, contentType: PROMETHEUS_CONTENT_TYPE };
    const registry = produced as { metrics?: unknown; contentType?: unknown } | null;
    if (typeof registry?.metrics === 'function') {
      const body = String(await registry.metrics());
      const contentType = typeof registry.contentType === 'string' ? registry.contentType : PROMETHEUS_CONTENT_TYPE;
      return { body, contentType };
    }
    throw new TypeError('runner.metrics() returned neither text nor a registry');
  };
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: metrics are at /metrics\n');
      return;
    }
    read().then(
      ({ body, contentType }) => response.writeHead(200, { 'content-type': contentType }).end(body),
      (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(error)}\n`),
    );
  });
  await listen(server, port, host);
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error) =>
      reject(new ConfigurationError(`Cannot serve metrics on ${host}:${port}: ${error.message}`, { cause: error })),
    );
    server.listen(port, host, () => {
      server.removeAllListeners('error');
      resolve();
    });
  });
}
