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

/** What the endpoint serves: the runner's `metrics()`. */
export interface MetricsSource {
  metrics(): Promise<string>;
}

/**
 * Serves `GET /metrics` from `source.metrics()` (a DefaultRunner), in Prometheus' text format.
 * @throws ConfigurationError when the port cannot be bound.
 */
export async function serveMetrics(source: MetricsSource, port: number, host: string): Promise<MetricsServer> {
  const read = async () => ({ body: await source.metrics(), contentType: PROMETHEUS_CONTENT_TYPE });
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
