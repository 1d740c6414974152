import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigurationError } from '@orreryjs/core';

/** Prometheus' text exposition format, what prom-client's registries produce. */
const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A running `/metrics` endpoint. */
export interface MetricsServer {
  /** The port it listens on (the one picked by the system when asked for 0). */
  readonly port: number;
  close(): Promise<void>;
}

/** What the endpoints serve: the runner's `metrics()` and `health()`. */
export interface MetricsSource {
  metrics(): Promise<string>;
  health(): Promise<{ status: string }>;
}

interface Reply {
  status: number;
  body: string;
  contentType: string;
}

/**
 * Serves `GET /metrics` from `source.metrics()` (a DefaultRunner), in Prometheus' text format,
 * and `GET /health`: `source.health()` as JSON, 503 when its status is `unhealthy`, else 200
 * (for a load balancer or an orchestrator's probe): `degraded`, and fleet conditions listed in
 * the body such as stranded schedules, never fail a readiness probe (DESIGN.md, Observability).
 * @throws ConfigurationError when the port cannot be bound.
 */
export async function serveMetrics(source: MetricsSource, port: number, host: string): Promise<MetricsServer> {
  const routes: Record<string, () => Promise<Reply>> = {
    '/metrics': async () => ({ status: 200, body: await source.metrics(), contentType: PROMETHEUS_CONTENT_TYPE }),
    '/health': async () => {
      const health = await source.health();
      return {
        status: health.status === 'unhealthy' ? 503 : 200,
        body: `${JSON.stringify(health)}\n`,
        contentType: 'application/json',
      };
    },
  };
  const server = createServer((request, response) => {
    const route = request.method === 'GET' ? routes[request.url?.split('?')[0] ?? ''] : undefined;
    if (route === undefined) {
      response
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('Not found: metrics are at /metrics, health at /health\n');
      return;
    }
    route().then(
      ({ status, body, contentType }) => response.writeHead(status, { 'content-type': contentType }).end(body),
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
