import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigurationError } from '@orreryjs/core';
import type { Command } from 'commander';
import { parsePort } from '../arguments.js';
import { type CliIo, type OutputOptions, writeJson, writeLine } from '../output.js';
import { type DatabaseOptions, databaseCommand, withClient } from '../runner-session.js';

interface DashboardOptions extends DatabaseOptions, OutputOptions {
  host: string;
  port: number;
  readOnly?: boolean;
}

/**
 * `orrery dashboard`: serves @orreryjs/dashboard over an OrreryClient with node:http until
 * SIGINT or SIGTERM, bound to 127.0.0.1 unless told otherwise (it has no login of its own).
 */
export function registerDashboardCommand(program: Command, io: CliIo): void {
  databaseCommand(program, 'dashboard', 'Serve the operator dashboard in a browser, until SIGINT or SIGTERM')
    .option(
      '--host <host>',
      'interface to listen on (the dashboard has no login: keep it local or behind a proxy)',
      '127.0.0.1',
    )
    .option('--port <port>', 'port to listen on (0 picks a free one)', parsePort, 4600)
    .option('--read-only', 'refuse every action (pause, trigger, cancel, ...) and hide the buttons')
    .action(async (options: DashboardOptions) => {
      const { createDashboard } = await import('@orreryjs/dashboard');
      await withClient(options, {}, async (client) => {
        const dashboard = createDashboard({ client, readOnly: options.readOnly === true });
        const server = createServer((req, res) => dashboard.handle(req, res));
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
        const { port } = server.address() as AddressInfo;
        const host = options.host.includes(':') ? `[${options.host}]` : options.host;
        const url = `http://${host}:${port}/`;
        if (options.json) writeJson(io, { url, readOnly: options.readOnly === true });
        else writeLine(io, `Orrery dashboard at ${url}${options.readOnly ? ' (read-only)' : ''}; Ctrl-C to stop.`);
        await nextStopSignal();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      });
    });
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
