import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { ConfigurationError } from '@orreryjs/core';
import type { Command } from 'commander';
import { parsePort } from '../arguments.js';
import { type CliIo, type OutputOptions, writeJson, writeLine } from '../output.js';
import { addDatabaseOptions, type DatabaseOptions, withClient } from '../runner-session.js';

interface DashboardOptions extends DatabaseOptions, OutputOptions {
  host: string;
  port: number;
  readOnly?: boolean;
  allowedHost: string[];
}

/**
 * `orrery dashboard`: serves @orreryjs/dashboard over an OrreryClient with node:http until
 * SIGINT or SIGTERM, bound to 127.0.0.1 unless told otherwise (it has no login of its own).
 */
export function registerDashboardCommand(program: Command, io: CliIo): void {
  // Not databaseCommand: its --json says "instead of a table", and the dashboard prints no
  // table. --json is kept (scripts and tests read the address it picked for --port 0), with
  // help that says what it prints.
  addDatabaseOptions(program.command('dashboard'))
    .description('Serve the operator dashboard in a browser, until SIGINT or SIGTERM')
    .option(
      '--host <host>',
      'interface to listen on (the dashboard has no login: keep it local or behind a proxy)',
      '127.0.0.1',
    )
    .option('--port <port>', 'port to listen on (0 picks a free one)', parsePort, 4600)
    .option('--read-only', 'refuse every action (pause, trigger, cancel, ...) and hide the buttons')
    .option(
      '--allowed-host <host>',
      'also answer requests sent to this name, such as the one a proxy forwards (repeatable; host or host:port)',
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .option('--json', 'print the address as one JSON document {"url","readOnly"} instead of a sentence')
    .action(async (options: DashboardOptions) => {
      const { createDashboard } = await import('@orreryjs/dashboard');
      await withClient(options, {}, async (client) => {
        const server = createServer();
        await new Promise<void>((resolve, reject) => {
          server.once('error', (error) =>
            reject(
              new ConfigurationError(
                `Cannot serve the dashboard on ${options.host}:${options.port}: ${error.message}`,
                {
                  cause: error,
                },
              ),
            ),
          );
          server.listen(options.port, options.host, () => resolve());
        });
        try {
          const { port } = server.address() as AddressInfo;
          // The Host answered to needs the bound port, known only now (--port 0). No request
          // is read before the handler is attached: this runs before the next I/O poll.
          const dashboard = createDashboard({
            client,
            readOnly: options.readOnly === true,
            allowedHosts: standaloneHosts(options.host, port, options.allowedHost),
          });
          server.on('request', (req, res) => dashboard.handle(req, res));
          const url = `http://${inUrl(options.host)}:${port}/`;
          if (options.json) writeJson(io, { url, readOnly: options.readOnly === true });
          else writeLine(io, `Orrery dashboard at ${url}${options.readOnly ? ' (read-only)' : ''}; Ctrl-C to stop.`);
          await nextStopSignal();
        } finally {
          await new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          });
        }
      });
    });
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '::1'];
const ANY_ADDRESS = new Set(['0.0.0.0', '::']);

/**
 * The `Host` values the standalone dashboard answers to, each with the bound port, so that
 * DNS rebinding (another site's name made to resolve to this address) cannot reach it:
 * - bound to a loopback address or `localhost`: that name and 127.0.0.1, localhost and [::1];
 * - bound to another address or name: that one only;
 * - bound to every interface (0.0.0.0 or ::): the operator chose to expose it, but a browser on
 *   this machine could still be rebound to it, so not any Host: the loopback names, this
 *   machine's host name and the address of each of its interfaces (read at start).
 * `--allowed-host` adds names (with a port, or any port), such as one a proxy forwards.
 */
function standaloneHosts(host: string, port: number, extra: readonly string[]): string[] {
  const names = ANY_ADDRESS.has(host)
    ? [
        ...LOOPBACK_NAMES,
        hostname(),
        ...Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address)),
      ]
    : [host, ...(isLoopback(host) ? LOOPBACK_NAMES : [])];
  return [...new Set([...names.map((name) => `${inUrl(name)}:${port}`), ...extra])];
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** A host as it is written in a URL: an IPv6 address in brackets. */
function inUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function nextStopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      resolve(signal);
    };
    process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  });
}
