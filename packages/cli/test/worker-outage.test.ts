import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../test/support/postgres.js';
import { FIXTURE_WORKFLOWS, orreryJson, startOrrery } from './support/cli.js';

const schema = freshSchemaName();
afterAll(() => dropSchema(schema));

/**
 * A TCP proxy to the test's PostgreSQL that can be cut (listener closed, every connection
 * destroyed) and restored on the same port: a database outage the worker cannot tell from a real one.
 */
class OutageProxy {
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  port = 0;

  constructor(readonly target: { host: string; port: number }) {}

  async up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = createConnection(this.target);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on('close', () => this.#sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    server.listen(this.port, '127.0.0.1');
    await once(server, 'listening');
    this.port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  async down(): Promise<void> {
    const closed = new Promise((resolve) => this.#server?.close(resolve));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }
}

/** The JSON log lines the worker printed so far. */
function logLines(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function until<T>(probe: () => T | undefined, what: string, alive: () => boolean): Promise<T> {
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (!alive()) throw new Error(`worker exited while waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('orrery worker through a database outage', () => {
  it('logs the failing loops while the database is unreachable, and the recovery once it is back', async () => {
    const url = new URL(postgresUrl());
    const proxy = new OutageProxy({ host: url.hostname, port: Number(url.port || 5432) });
    await proxy.up();
    const proxied = new URL(url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    const env = { ORRERY_DATABASE_URL: proxied.toString(), ORRERY_SCHEMA: schema };
    // Directly, not through the proxy: a synchronous child blocks this process, and the proxy with it.
    orreryJson(['migrate'], { env: { ...env, ORRERY_DATABASE_URL: postgresUrl() } });

    const child = startOrrery(['worker', FIXTURE_WORKFLOWS, '--json'], { env });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const alive = () => child.exitCode === null && child.signalCode === null;
    try {
      await until(() => logLines(stdout).find((l) => l.event === 'worker:started'), 'start', alive);
      await proxy.down();
      const failed = await until(
        () => logLines(stdout).find((l) => l.msg === 'background loop tick failed'),
        'a failed tick to be logged',
        alive,
      );
      expect(failed).toMatchObject({
        level: 50,
        loop: expect.any(String),
        err: expect.objectContaining({ message: expect.any(String) }),
      });
      await proxy.up();
      const recovered = await until(
        () => logLines(stdout).find((l) => l.msg === 'background loop recovered'),
        'the recovery to be logged',
        alive,
      );
      expect(recovered).toMatchObject({ level: 30, failures: expect.any(Number) });
      child.kill('SIGTERM');
      const [code] = await once(child, 'exit');
      expect(code, stderr).toBe(0);
      // Each loop that failed logs its recovery once, not once per later tick.
      const recoveries = logLines(stdout).filter((l) => l.msg === 'background loop recovered');
      expect(new Set(recoveries.map((l) => l.loop)).size).toBe(recoveries.length);
    } finally {
      if (alive()) child.kill('SIGKILL');
      await proxy.down();
    }
  });
});
