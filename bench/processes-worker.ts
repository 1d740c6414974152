/**
 * One worker process of bench/processes.ts, for graphile-worker or Orrery, driven over IPC:
 *   parent → { go }     start the worker (graphile-worker `run()`, Orrery `create()` + `start()`)
 *   parent → { markCpu } count CPU from now on (the start of a window after `go`)
 *   child  → { ran: n } how many handlers ran so far (at most every 20 ms, and once more at stop)
 *   parent → { stop }   stop it and exit; child → { ran, cpuMs } (its CPU time from go, or the last markCpu, to stopped) last
 * Settings match the peers harness: 10 handlers at once, a pool of 12, everything else at the
 * system's defaults (graphile-worker LISTEN/NOTIFY with a 2 s poll, Orrery LISTEN with a 250 ms poll).
 * argv: <graphile|orrery> <schema>; PEERS_PG_URL and PEERS_DIR (graphile-worker) from the environment.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';

const [system, schema] = process.argv.slice(2);
const url = process.env.PEERS_PG_URL as string;
const CONCURRENCY = 10;
const POOL = CONCURRENCY + 2;

let ran = 0;
let lastSent = -1;
const report = setInterval(() => {
  if (ran === lastSent) return;
  lastSent = ran;
  process.send?.({ ran });
}, 20);
const handled = () => {
  ran += 1;
};

const quiet = {
  debug() {},
  info() {},
  warn: (_: unknown, msg?: string) => console.error(`[${system} warn] ${msg ?? ''}`),
  error: (_: unknown, msg?: string) => console.error(`[${system} error] ${msg ?? ''}`),
};

async function startGraphile(): Promise<() => Promise<void>> {
  const require = createRequire(path.join(process.env.PEERS_DIR ?? process.cwd(), 'package.json'));
  const gw = require('graphile-worker');
  const logger = new gw.Logger(() => (level: string, message: string) => {
    if (level === 'error' || level === 'warning') console.error(`[graphile-worker ${level}] ${message}`);
  });
  const runner = await gw.run({
    connectionString: url,
    schema,
    concurrency: CONCURRENCY,
    maxPoolSize: POOL,
    noHandleSignals: true,
    crontab: '',
    logger,
    taskList: { peers_noop: async () => handled() },
  });
  return () => runner.stop();
}

async function startOrrery(): Promise<() => Promise<void>> {
  const workflow = defineWorkflow({ name: 'peers_noop', tasks: [{ id: 'noop', run: () => handled() }] });
  const runner = await DefaultRunner.create({
    database: url,
    schema,
    workflows: [workflow],
    enableCronScheduling: false,
    maxConcurrentTasks: CONCURRENCY,
    pool: { max: POOL },
    logger: quiet,
  });
  await runner.start();
  return () => runner.shutdown({ timeoutMs: 5_000 });
}

let stop: (() => Promise<void>) | undefined;
let cpuAtGo: NodeJS.CpuUsage | undefined;
process.on('message', async (message: { go?: true; markCpu?: true; stop?: true }) => {
  if (message.markCpu) {
    cpuAtGo = process.cpuUsage();
  } else if (message.go) {
    cpuAtGo = process.cpuUsage();
    stop = await (system === 'graphile' ? startGraphile() : startOrrery());
    process.send?.({ started: true });
  } else if (message.stop) {
    await stop?.();
    clearInterval(report);
    const cpu = process.cpuUsage(cpuAtGo);
    process.send?.({ ran, cpuMs: (cpu.user + cpu.system) / 1000 }, () => process.exit(0));
  }
});
process.send?.({ ready: true });
