// Single-job start latency of graphile-worker and one or more Orrery builds, one job at a time,
// the systems taking turns job by job in one process: the machine's drift (the disk's flush time,
// other tenants) then falls on every system alike, where separate runs differ by ±10 % from one
// to the next. Each system has its own producer, worker and schema, as in ../shared/peers
// (graphile-worker: makeWorkerUtils().addJob() and run(); Orrery: OrreryClient.executeAsync() and
// a started DefaultRunner). Measured: the enqueue call's start → the task code's start, and the
// part after the call returned. Prints medians, writes a JSON line to bench/results/ (--out).
//
//   PEERS_PG_URL=postgres://postgres@127.0.0.1:55433/postgres PEERS_DIR=$SCRATCH \
//     node bench/peers-latency-interleaved.mjs --orrery=before:/tmp/base --orrery=after:. [--iters=300] [--gap=1000]
//
// PEERS_DIR holds graphile-worker (see ../shared/peers/README.md); each --orrery=label:dir is a
// built Orrery checkout. It drops and recreates its schemas: point it at a throwaway database.
//
// --steps also takes each start apart at the wire, with marks on each system's own copy of pg
// (its Client's query and its 'notification' event; nothing in the systems' code changes): the
// enqueue call, call returned → the worker reads the NOTIFY, NOTIFY → claim sent, the claim's
// round trip (pg's callback, rows parsed), and the claim's reply → the task code. The claim is
// graphile-worker's get_job (`with j as`) and Orrery's (`with "ready" as`); the last one
// replied before the code started is the one that leased the job.

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = Object.fromEntries(
  process.argv
    .slice(2)
    .filter((a) => !a.startsWith('--orrery='))
    .map((a) => a.replace(/^--/, '').split('=')),
);
const orreryBuilds = process.argv
  .slice(2)
  .filter((a) => a.startsWith('--orrery='))
  .map((a) => {
    const [label, dir] = a.slice('--orrery='.length).split(':');
    return { label, dir: path.resolve(dir) };
  });
const url = process.env.PEERS_PG_URL;
if (!url || !process.env.PEERS_DIR) throw new Error('set PEERS_PG_URL and PEERS_DIR (see ../shared/peers/README.md)');
const iters = Number(args.iters ?? 300);
const withSteps = 'steps' in args;
const warmup = Number(args.warmup ?? 10);
const gapMs = Number(args.gap ?? 1000);
const require = createRequire(path.join(path.resolve(process.env.PEERS_DIR), 'node_modules/'));
const pg = require('pg');

async function dropSchema(schema) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`drop schema if exists ${schema} cascade`);
  await client.end();
}

/** A system: enqueue(onStart) resolves when the enqueue call returns; onStart(t) is called as its task code starts. */
async function graphileWorker() {
  const gw = require('graphile-worker');
  const schema = 'interleaved_graphile';
  await dropSchema(schema);
  const logger = new gw.Logger(() => (level, message) => {
    if (level === 'error' || level === 'warning') console.error(`[graphile-worker ${level}] ${message}`);
  });
  const utils = await gw.makeWorkerUtils({ connectionString: url, schema, logger });
  await utils.migrate();
  let started = () => {};
  const runner = await gw.run({
    connectionString: url,
    schema,
    logger,
    concurrency: 10,
    maxPoolSize: 12,
    noHandleSignals: true,
    crontab: '',
    taskList: { noop: async () => started(performance.now()) },
  });
  return {
    label: 'graphile-worker',
    enqueue: (onStart) => {
      started = onStart;
      return utils.addJob('noop', {});
    },
    close: async () => {
      await runner.stop();
      await utils.release();
    },
  };
}

async function orrery({ label, dir }, index) {
  const { DefaultRunner, OrreryClient, defineWorkflow } = await import(
    pathToFileURL(path.join(dir, 'packages/runner/dist/index.js')).href
  );
  const schema = `interleaved_orrery_${index}`;
  await dropSchema(schema);
  const logger = { debug() {}, info() {}, warn: console.error, error: console.error };
  let started = () => {};
  const workflow = defineWorkflow({
    name: 'noop',
    tasks: [{ id: 'noop', run: async () => started(performance.now()) }],
  });
  const common = { database: url, schema, enableCronScheduling: false, logger };
  const worker = await DefaultRunner.create({ ...common, workflows: [workflow], maxConcurrentTasks: 10 });
  await worker.start();
  const producer = await OrreryClient.create({ database: url, schema, logger });
  return {
    label: `orrery ${label}`,
    enqueue: (onStart) => {
      started = onStart;
      return producer.executeAsync('noop', {});
    },
    close: async () => {
      await producer.close();
      await worker.shutdown({ timeoutMs: 5000 });
    },
  };
}

/** What --steps records: each claim's send and reply, each NOTIFY, by the pg copy (system) they came through. */
const marks = [];
const CLAIM = /^\s*(with j as|with "ready" as)/i;

/** Marks the claims and NOTIFYs that go through one copy of pg as the system `label`'s. */
function markWire(pgModule, label) {
  const { query, emit } = pgModule.Client.prototype;
  pgModule.Client.prototype.query = function (config, ...rest) {
    const text = typeof config === 'string' ? config : (config?.text ?? '');
    if (!CLAIM.test(text)) return query.call(this, config, ...rest);
    const mark = { label, kind: 'claim', sentAt: performance.now(), repliedAt: 0 };
    marks.push(mark);
    const last = rest.at(-1);
    if (typeof last === 'function') {
      const replied = (...results) => {
        mark.repliedAt = performance.now();
        return last(...results);
      };
      return query.call(this, config, ...rest.slice(0, -1), replied);
    }
    const result = query.call(this, config, ...rest);
    result?.then?.(
      () => (mark.repliedAt = performance.now()),
      () => {},
    );
    return result;
  };
  pgModule.Client.prototype.emit = function (event, ...rest) {
    if (event === 'notification') marks.push({ label, kind: 'notify', at: performance.now() });
    return emit.call(this, event, ...rest);
  };
}

/** One start taken apart from the marks of its system between its call and its code (null if one is missing). */
function stepsOf(label, t0, returnedAt, codeAt) {
  const mine = marks.filter((m) => m.label === label);
  const notify = mine.find((m) => m.kind === 'notify' && m.at >= t0);
  const claim = mine.filter((m) => m.kind === 'claim' && m.repliedAt > 0 && m.repliedAt <= codeAt).at(-1);
  if (notify === undefined || claim === undefined) return null;
  return {
    call: returnedAt - t0,
    callToNotify: notify.at - returnedAt,
    notifyToClaim: claim.sentAt - notify.at,
    claimRoundTrip: claim.repliedAt - claim.sentAt,
    replyToCode: codeAt - claim.repliedAt,
  };
}

if (withSteps) {
  markWire(pg, 'graphile-worker');
  for (const { label, dir } of orreryBuilds)
    markWire(createRequire(path.join(dir, 'node_modules/'))('pg'), `orrery ${label}`);
}
const systems = [await graphileWorker(), ...(await Promise.all(orreryBuilds.map(orrery)))];
const samples = systems.map(() => ({ start: [], afterCall: [], steps: [] }));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
for (let n = 0; n < warmup + iters; n++) {
  // A rotating order, so that no system always follows the same other one.
  for (let k = 0; k < systems.length; k++) {
    const i = (n + k) % systems.length;
    let onStart;
    const startedAt = new Promise((resolve) => {
      onStart = resolve;
    });
    marks.length = 0;
    const t0 = performance.now();
    await systems[i].enqueue(onStart);
    const returnedAt = performance.now();
    const t1 = await startedAt;
    if (n >= warmup) {
      samples[i].start.push(t1 - t0);
      samples[i].afterCall.push(t1 - returnedAt);
      // Every mark of this start is in: a claim's reply is marked before its caller resumes.
      if (withSteps) {
        const steps = stepsOf(systems[i].label, t0, returnedAt, t1);
        if (steps !== null) samples[i].steps.push(steps);
      }
    }
    await sleep(Math.random() * gapMs);
  }
  if ((n + 1) % 50 === 0) console.error(`${n + 1} / ${warmup + iters} jobs per system`);
}
for (const system of systems) await system.close();

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return Number(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)].toFixed(3));
};
const base = samples[0];
const result = systems.map((system, i) => ({
  system: system.label,
  start_p50_ms: quantile(samples[i].start, 0.5),
  start_p99_ms: quantile(samples[i].start, 0.99),
  after_call_p50_ms: quantile(samples[i].afterCall, 0.5),
  start_p50_ratio: Number((quantile(samples[i].start, 0.5) / quantile(base.start, 0.5)).toFixed(3)),
}));
console.table(result);
const STEPS = ['call', 'callToNotify', 'notifyToClaim', 'claimRoundTrip', 'replyToCode'];
const medianUs = (ms) => Math.round(1000 * quantile(ms, 0.5));
/** Each system's median of each step of --steps, in µs. */
const stepMedians = () =>
  systems.map((system, i) => ({
    system: system.label,
    jobs: samples[i].steps.length,
    ...Object.fromEntries(STEPS.map((step) => [`${step}_p50_us`, medianUs(samples[i].steps.map((s) => s[step]))])),
  }));
const steps = withSteps ? stepMedians() : undefined;
if (steps !== undefined) console.table(steps);
const line = JSON.stringify({ at: new Date().toISOString(), iters, gapMs, builds: orreryBuilds, result, steps });
if (args.out) fs.appendFileSync(args.out, `${line}\n`);
process.exit(0);
