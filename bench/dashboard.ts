/**
 * Server time of the dashboard's heaviest pages on SQLite.
 *
 *   npm run bench:dashboard
 *   BENCH_SCALE=0.1 npm run bench:dashboard   # fewer rows, for a quick look
 *
 * Scenarios: the Schedules page with 10,000 schedules (first page and a deep page) and a
 * schedule's detail page with 100,000 ledger rows (first page of the timeline and the last
 * one). Schedules are added through the runner's API; ledger rows are inserted through the
 * storage port in batches. Each page is rendered through `dashboard.fetch` (no network),
 * after warm-up; the target is < 300 ms. Results are printed and written to
 * bench/results/dashboard-<date>.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type NewCronExecution, occurrenceId } from '@orreryjs/core';
import { createDashboard } from '@orreryjs/dashboard';
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const SCHEDULES = Math.ceil(10_000 * SCALE);
const LEDGER_ROWS = Math.ceil(100_000 * SCALE);
const RUNS = 20;
const TARGET_MS = 300;
const EXPRESSIONS = ['*/5 * * * *', '0 9 * * MON-FRI', '30 2 * * *', '0 */2 * * *', '15 14 1 * *', '*/10 * * * * *'];
const ZONES = ['UTC', 'America/New_York', 'Europe/Paris', 'Asia/Tokyo', 'Australia/Lord_Howe'];

const dir = mkdtempSync(join(tmpdir(), 'orrery-bench-dashboard-'));
const filename = join(dir, 'orrery.db');
const workflow = defineWorkflow({ name: 'bench', tasks: [{ id: 'only', run: () => {} }] });
const runner = await DefaultRunner.create({ database: `sqlite:${filename}`, workflows: [workflow] });

let started = performance.now();
for (let i = 0; i < SCHEDULES; i += 1) {
  await runner.addCronSchedule({
    name: `schedule-${String(i).padStart(5, '0')}`,
    workflowName: 'bench',
    cronExpression: EXPRESSIONS[i % EXPRESSIONS.length] as string,
    timezone: ZONES[i % ZONES.length] as string,
  });
}
console.log(`added ${SCHEDULES} schedules in ${((performance.now() - started) / 1000).toFixed(1)} s`);

const ledgerSchedule = await runner.addCronSchedule({
  name: 'busy',
  workflowName: 'bench',
  cronExpression: '* * * * * *',
});
const storage = await openSqliteStorage({ filename });
started = performance.now();
const t0 = Date.parse('2026-01-01T00:00:00Z');
for (let offset = 0; offset < LEDGER_ROWS; offset += 1000) {
  const rows: NewCronExecution[] = [];
  for (let i = offset; i < Math.min(LEDGER_ROWS, offset + 1000); i += 1) {
    const scheduledTime = new Date(t0 + i * 1000);
    rows.push({
      id: occurrenceId(ledgerSchedule.id, scheduledTime),
      scheduleId: ledgerSchedule.id,
      workflowName: 'bench',
      context: {},
      scheduledTime,
      fireAt: scheduledTime,
      claimedAt: new Date(scheduledTime.getTime() + 40),
      claimedBy: 'bench',
      status: i % 3 === 0 ? 'missed' : 'skipped',
      source: 'schedule',
      missedCount: i % 3 === 0 ? 1 : 0,
    });
  }
  await storage.cron.insertOccurrences(rows);
}
await storage.close();
console.log(`inserted ${LEDGER_ROWS} ledger rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);

const dashboard = createDashboard({ client: runner });
const lastSchedulesPage = Math.ceil((SCHEDULES + 1) / 50);
const lastLedgerPage = Math.ceil(LEDGER_ROWS / 100);
const scenarios = [
  { name: `schedules page 1 (${SCHEDULES} schedules)`, path: '/schedules' },
  { name: `schedules page ${lastSchedulesPage} (last)`, path: `/schedules?page=${lastSchedulesPage}` },
  { name: `api/schedules?limit=50 (${SCHEDULES} schedules)`, path: '/api/schedules?limit=50' },
  { name: `schedule detail, ledger page 1 (${LEDGER_ROWS} rows)`, path: `/schedules/${ledgerSchedule.id}` },
  {
    name: `schedule detail, ledger page ${lastLedgerPage} (last)`,
    path: `/schedules/${ledgerSchedule.id}?page=${lastLedgerPage}`,
  },
  { name: `api/schedules/busy/ledger?limit=100 (${LEDGER_ROWS} rows)`, path: '/api/schedules/busy/ledger?limit=100' },
];

interface Result {
  name: string;
  path: string;
  runs: number;
  bytes: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
  underTarget: boolean;
}
const results: Result[] = [];
for (const scenario of scenarios) {
  const timings: number[] = [];
  let bytes = 0;
  for (let run = -3; run < RUNS; run += 1) {
    const begin = performance.now();
    const response = await dashboard.fetch(new Request(`http://bench.local${scenario.path}`));
    const body = await response.text();
    const elapsed = performance.now() - begin;
    if (response.status !== 200) throw new Error(`${scenario.path} answered ${response.status}: ${body.slice(0, 300)}`);
    bytes = body.length;
    if (run >= 0) timings.push(elapsed);
  }
  timings.sort((a, b) => a - b);
  const pick = (q: number) => timings[Math.min(timings.length - 1, Math.ceil(timings.length * q) - 1)] as number;
  results.push({
    ...scenario,
    runs: RUNS,
    bytes,
    p50Ms: pick(0.5),
    p95Ms: pick(0.95),
    maxMs: timings.at(-1) as number,
    underTarget: pick(0.95) < TARGET_MS,
  });
}

await runner.shutdown();
rmSync(dir, { recursive: true, force: true });

console.log(
  `\n${'scenario'.padEnd(58)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'max ms'.padStart(8)} ${'KiB'.padStart(6)}`,
);
for (const r of results) {
  console.log(
    `${r.name.padEnd(58)} ${r.p50Ms.toFixed(1).padStart(8)} ${r.p95Ms.toFixed(1).padStart(8)} ${r.maxMs.toFixed(1).padStart(8)} ${(r.bytes / 1024).toFixed(0).padStart(6)}`,
  );
}
const resultsDir = new URL('./results/', import.meta.url);
mkdirSync(resultsDir, { recursive: true });
const file = new URL(`dashboard-${new Date().toISOString().slice(0, 10)}.json`, resultsDir);
const machine = { node: process.version, cpus: availableParallelism(), cpuModel: cpus()[0]?.model ?? 'unknown' };
writeFileSync(
  file,
  `${JSON.stringify({ date: new Date().toISOString(), machine, scale: SCALE, targetMs: TARGET_MS, schedules: SCHEDULES, ledgerRows: LEDGER_ROWS, results }, null, 2)}\n`,
);
console.log(`\nwrote ${file.pathname}`);
