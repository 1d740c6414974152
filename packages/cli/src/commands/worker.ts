import type { DefaultRunner } from '@orreryjs/runner';
import type { Command } from 'commander';
import { integerAtLeast, parseDurationMs } from '../arguments.js';
import { type MetricsServer, serveMetrics } from '../metrics-server.js';
import { addJsonOption, type CliIo, type OutputOptions } from '../output.js';
import { addDatabaseOptions, type DatabaseOptions, loadRunnerClass, redactDatabaseUrl } from '../runner-session.js';
import { loadWorkflows } from '../workflow-module.js';

interface WorkerOptions extends DatabaseOptions, OutputOptions {
  concurrency?: number;
  runnerId?: string;
  cron: boolean;
  migrate: boolean;
  shutdownTimeout: number;
  metricsPort?: number;
  metricsHost: string;
  quiet?: boolean;
}

/** Runner events a worker reports; the per-task start and pipeline creation are left out as noise. */
const REPORTED_EVENTS = [
  'pipeline:completed',
  'pipeline:failed',
  'pipeline:cancelled',
  'task:completed',
  'task:failed',
  'task:skipped',
  'cron:fired',
  'cron:skipped',
  'cron:lost',
  'cron:recovered',
  'cron:abandoned',
] as const;

/** `orrery worker <module…>`: runs the workflows a module exports until SIGINT or SIGTERM. */
export function registerWorkerCommand(program: Command, io: CliIo): void {
  addJsonOption(addDatabaseOptions(program.command('worker')))
    .description('Run tasks and cron schedules of the workflows some modules export, until SIGINT or SIGTERM')
    .argument('<module...>', 'modules whose exports include workflows (values of defineWorkflow)')
    .option('--concurrency <n>', 'tasks run at once (default 16)', integerAtLeast(1))
    .option('--runner-id <id>', 'name of this runner in the database (default host-pid-random)')
    .option('--no-cron', 'run tasks only; do not fire cron schedules')
    .option('--no-migrate', 'refuse a database whose schema is out of date instead of migrating it')
    .option(
      '--shutdown-timeout <duration>',
      'on a signal, how long running tasks may finish (e.g. 30s, 5m)',
      parseDurationMs,
      30_000,
    )
    .option('--metrics-port <port>', 'serve Prometheus metrics at http://<host>:<port>/metrics', integerAtLeast(0))
    .option('--metrics-host <host>', 'interface the metrics endpoint listens on', '0.0.0.0')
    .option('--quiet', 'print only start and stop, not pipeline, task and cron events')
    .action(async (modules: string[], options: WorkerOptions) => {
      const workflows = await loadWorkflows(modules);
      const DefaultRunner = await loadRunnerClass();
      const runner = await DefaultRunner.create({
        database: options.database,
        ...(options.schema === undefined ? {} : { schema: options.schema }),
        ...(options.concurrency === undefined ? {} : { maxConcurrentTasks: options.concurrency }),
        ...(options.runnerId === undefined ? {} : { runnerId: options.runnerId }),
        workflows,
        enableCronScheduling: options.cron,
        migrate: options.migrate,
      });
      const report = reporter(io, options.json);
      let metrics: MetricsServer | undefined;
      try {
        if (options.metricsPort !== undefined) {
          metrics = await serveMetrics(runner, options.metricsPort, options.metricsHost);
        }
        if (!options.quiet) forwardEvents(runner, report);
        await runner.start();
        report('worker:started', {
          workflows: workflows
            .map((w) => w.name)
            .sort()
            .join(','),
          database: redactDatabaseUrl(options.database),
          cron: options.cron,
          runnerId: runner.runnerId,
          ...(metrics === undefined ? {} : { metrics: `http://${options.metricsHost}:${metrics.port}/metrics` }),
        });
        const signal = await nextStopSignal();
        report('worker:stopping', { signal, timeoutMs: options.shutdownTimeout });
        const forceExit = () => process.exit(130);
        process.once('SIGINT', forceExit).once('SIGTERM', forceExit);
        try {
          await runner.shutdown({ timeoutMs: options.shutdownTimeout });
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

type Report = (event: string, fields: Record<string, unknown>) => void;

/** One line per event: `<ISO time> <event> key=value …`, or a JSON object per line with --json. */
function reporter(io: CliIo, json: boolean | undefined): Report {
  return (event, fields) => {
    const at = new Date().toISOString();
    const flat = flatten(fields);
    if (json) {
      io.stdout(`${JSON.stringify({ at, event, ...flat })}\n`);
      return;
    }
    const pairs = Object.entries(flat).map(
      ([key, value]) => `${key}=${typeof value === 'string' && /\s/.test(value) ? JSON.stringify(value) : value}`,
    );
    io.stdout(`${[at, event, ...pairs].join(' ')}\n`);
  };
}

function forwardEvents(runner: DefaultRunner, report: Report): void {
  // The runner's event map is typed per event; here every payload is handled alike.
  const emitter = runner as unknown as { on(event: string, listener: (payload: unknown) => void): unknown };
  for (const event of REPORTED_EVENTS) {
    emitter.on(event, (payload) =>
      report(event, typeof payload === 'object' && payload !== null ? (payload as Record<string, unknown>) : {}),
    );
  }
}

/** Scalar fields only (dates as ISO, errors as their message): contexts and results stay out of the log. */
function flatten(fields: Record<string, unknown>): Record<string, string | number | boolean> {
  const flat: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') flat[key] = value;
    else if (value instanceof Date) flat[key] = value.toISOString();
    else if (value instanceof Error) flat[key] = value.message;
  }
  return flat;
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
