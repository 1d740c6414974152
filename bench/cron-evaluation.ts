/**
 * Cost of evaluating a schedule expression, per occurrence: `nextOccurrences` over N
 * occurrences for a 5-field expression, the Quartz day rules and an `@every` interval, in UTC
 * and in a zone with DST. No database: this is the scheduler's CPU per fire.
 *
 *   npm run bench:cron-eval
 *   BENCH_SCALE=0.1 npm run bench:cron-eval   # fewer occurrences, for a quick look
 *
 * Each expression is parsed once before timing (the scheduler keeps one parsed expression per
 * schedule), then walked for OCCURRENCES occurrences; the rounds alternate the expressions so
 * that load on the machine hits them alike, and the median round is reported. Results are
 * printed as a table and written to bench/results/cron-evaluation-<date>.json. Nothing
 * asserts a time (see README.md).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { nextOccurrences } from '@orreryjs/cron';

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const OCCURRENCES = Math.ceil(2_000 * SCALE);
const ROUNDS = 7;
const AFTER = new Date('2026-01-01T00:00:00.000Z');
// The first is the baseline; `0 0 1 * *` is the 5-field expression with as few occurrences
// per month as the Quartz rules, so a walk of the same number of days per occurrence.
const EXPRESSIONS = ['*/5 * * * *', '0 0 1 * *', '0 0 L * *', '0 0 15W * *', '0 0 * * 5#3', '@every 5m'];
const ZONES = ['UTC', 'America/New_York'];

interface Row {
  expression: string;
  timezone: string;
  occurrences: number;
  /** Median round, microseconds per occurrence. */
  usPerOccurrence: number;
  /** Median round over the first expression's (every 5 minutes) in the same zone. */
  vsFiveField: number;
}

/** Microseconds per occurrence of one walk of `count` occurrences. */
function walk(expression: string, timezone: string, count: number): number {
  const started = performance.now();
  const found = nextOccurrences(expression, { timezone, after: AFTER, count });
  const elapsedMs = performance.now() - started;
  if (found.length !== count) throw new Error(`${expression} gave ${found.length} of ${count} occurrences`);
  return (elapsedMs * 1000) / count;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const rows: Row[] = [];
for (const timezone of ZONES) {
  // Warm-up: parse every expression and let the JIT settle on the walk.
  for (const expression of EXPRESSIONS) walk(expression, timezone, Math.min(1000, OCCURRENCES));
  const samples = new Map<string, number[]>(EXPRESSIONS.map((expression) => [expression, []]));
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const expression of EXPRESSIONS) samples.get(expression)!.push(walk(expression, timezone, OCCURRENCES));
    console.log(`  ${timezone}: round ${round}/${ROUNDS} done`);
  }
  const baseline = median(samples.get(EXPRESSIONS[0]!)!);
  for (const expression of EXPRESSIONS) {
    const usPerOccurrence = median(samples.get(expression)!);
    rows.push({
      expression,
      timezone,
      occurrences: OCCURRENCES,
      usPerOccurrence,
      vsFiveField: usPerOccurrence / baseline,
    });
  }
}

console.table(
  rows.map((row) => ({
    ...row,
    usPerOccurrence: row.usPerOccurrence.toFixed(2),
    vsFiveField: `${row.vsFiveField.toFixed(2)}x`,
  })),
);
const environment = {
  node: process.version,
  cpus: availableParallelism(),
  cpuModel: cpus()[0]?.model ?? 'unknown',
  loadavg: loadavg().map((load) => load.toFixed(2)),
  scale: SCALE,
  rounds: ROUNDS,
};
mkdirSync(new URL('results/', import.meta.url), { recursive: true });
const file = new URL(`results/cron-evaluation-${new Date().toISOString().slice(0, 10)}.json`, import.meta.url);
writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), environment, results: rows }, null, 2)}\n`);
console.log(`written to ${file.pathname}`);
