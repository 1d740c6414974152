import type { Command } from 'commander';
import { integerAtLeast, oneOf, parseDurationMs, parsePort } from '../arguments.js';
import { type MetricsServer, serveMetrics } from '../metrics-server.js';
import type { CliIo, OutputOptions } from '../output.js';
import { addDatabaseOptions, type DatabaseOptions, redactDatabaseUrl } from '../runner-session.js';
import {
  asLibraryLogger,
  createWorkerLogger,
  LOG_FORMATS,
  LOG_LEVELS,
  type LogFormat,
  type LogLevel,
  logRunnerEvents,
} from '../worker-log.js';
import { loadWorkflows } from '../workflow-module.js';

interface WorkerOptions extends DatabaseOptions, OutputOptions {
  concurrency?: number;
  runnerId?: string;
  cron: boolean;
  migrate: boolean;
  shutdownTimeout?: number;
  metricsPort?: number;
  metricsHost: string;
  quiet?: boolean;
  logLevel: LogLevel;
  logFormat: LogFormat;
}

/** `orrery worker <module…>`: runs the workflows a module exports until SIGINT or SIGTERM. */
export function registerWorkerCommand(program: Command, io: CliIo): void {
  addDatabaseOptions(program.command('worker'))
    .description('Run tasks and cron schedules of the workflows some modules export, until SIGINT or SIGTERM')
    .argument('<module...>', 'modules whose exports include workflows (values of defineWorkflow)')
    .option('--concurrency <n>', 'tasks run at once (default 16)', integerAtLeast(1))
    .option('--runner-id <id>', 'name of this runner in the database (default host-pid-random)')
    .option('--no-cron', 'run tasks only; do not fire cron schedules')
    .option('--no-migrate', 'refuse a database whose schema is out of date instead of migrating it')
    // No commander default: it would print as milliseconds ("default: 30000"), and the value is
    // the runner's SHUTDOWN_TIMEOUT_MS (importing it here would load the runner for --help).
    .option(
      '--shutdown-timeout <duration>',
      "on a signal, how long running tasks may finish (e.g. 90s, 5m; default 30s, the runner's)",
      parseDurationMs,
    )
    .option(
      '--metrics-port <port>',
      'serve Prometheus metrics at http://<host>:<port>/metrics and health at /health',
      parsePort,
    )
    .option('--metrics-host <host>', 'interface the metrics endpoint listens on', '127.0.0.1')
    .option('--log-level <level>', `log at this level and above: ${LOG_LEVELS.join(', ')}`, oneOf(LOG_LEVELS), 'info')
    .option(
      '--log-format <format>',
      'pretty (readable lines), json (one object per line), or auto: pretty on a terminal, else json',
      oneOf(LOG_FORMATS),
      'auto',
    )
    .option('--json', 'log JSON lines, as --log-format json')
    .option('--quiet', 'log routine pipeline, task and cron events at debug level (failures stay visible)')
    .action(async (modules: string[], options: WorkerOptions) => {
      const workflows = await loadWorkflows(modules);
      const format: LogFormat = options.json ? 'json' : options.logFormat;
      const logger = createWorkerLogger(io, options.logLevel, format, process.stdout.isTTY === true);
      // Loaded on first use: `next` and `--help` start without the runner and its drivers.
      const { DefaultRunner, SHUTDOWN_TIMEOUT_MS } = await import('@orreryjs/runner');
      const shutdownTimeoutMs = options.shutdownTimeout ?? SHUTDOWN_TIMEOUT_MS;
      const runner = await DefaultRunner.create({
        database: options.database,
        ...(options.schema === undefined ? {} : { schema: options.schema }),
        ...(options.concurrency === undefined ? {} : { maxConcurrentTasks: options.concurrency }),
        ...(options.runnerId === undefined ? {} : { runnerId: options.runnerId }),
        workflows,
        enableCronScheduling: options.cron,
        migrate: options.migrate,
        logger: asLibraryLogger(logger),
      });
      const report = (event: string, fields: Record<string, unknown>) => logger.info({ event, ...fields }, event);
      let metrics: MetricsServer | undefined;
      try {
        if (options.metricsPort !== undefined) {
          metrics = await serveMetrics(runner, options.metricsPort, options.metricsHost);
        }
        logRunnerEvents(runner, logger, options.quiet === true);
        await runner.start();
        report('worker:started', {
          workflows: workflows
            .map((w) => w.name)
            .sort()
            .join(','),
          database: redactDatabaseUrl(options.database),
          cron: options.cron,
          runnerId: runner.runnerId,
          ...(metrics === undefined
            ? {}
            : { metrics: `http://${urlHost(options.metricsHost)}:${metrics.port}/metrics` }),
        });
        const signal = await nextStopSignal();
        report('worker:stopping', { signal, timeoutMs: shutdownTimeoutMs });
        const forceExit = () => process.exit(130);
        process.once('SIGINT', forceExit).once('SIGTERM', forceExit);
        try {
          await runner.shutdown({ timeoutMs: shutdownTimeoutMs });
        } finally {
          process.off('SIGINT', forceExit).off('SIGTERM', forceExit);
        }
        report('worker:stopped', {});
      } finally {
        await metrics?.close();
        await runner.shutdown();
      }
    });
}

/** A host as it goes in a URL: an IPv6 address in brackets. */
function urlHost(host: string): string {
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
