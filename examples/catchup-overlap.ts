/**
 * Catch-up and overlap policies, with time under our control: `npx tsx --conditions=source examples/catchup-overlap.ts`
 *
 * A ManualClock stands in for the wall clock, so minutes pass in milliseconds.
 * 1. Three every-minute schedules, one per catch-up policy (skip, run_once, run_all), fire on
 *    time; then the runner stops (an outage) while the clock moves on 9 minutes, and a new
 *    runner on the same database decides what each policy runs of the slots it missed.
 * 2. An every-minute schedule with overlapPolicy 'skip' whose pipeline is still running when
 *    the next minutes come: those occurrences are skipped, and it fires again once it is done.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DefaultRunner, defineWorkflow, ManualClock } from '@orreryjs/runner';

const MINUTE = 60_000;
const clock = new ManualClock(new Date('2026-01-01T00:00:30Z'));
const hm = (date: Date) => date.toISOString().slice(11, 16);
const hms = (date: Date) => date.toISOString().slice(11, 19);

let openGate: () => void = () => {};
const gate = new Promise<void>((resolve) => {
  openGate = resolve;
});
const quick = defineWorkflow({ name: 'quick', tasks: [{ id: 'work', run: (ctx) => void ctx.set('done', true) }] });
const slow = defineWorkflow({ name: 'slow', tasks: [{ id: 'long-job', run: () => gate }] });

const dir = mkdtempSync(join(tmpdir(), 'orrery-catchup-'));
const open = () =>
  DefaultRunner.create({
    database: `sqlite:${join(dir, 'orrery.db')}`,
    workflows: [quick, slow],
    clock,
    cronPollIntervalMs: 20,
    pollIntervalMs: 20,
    cronMisfireThresholdMs: 30_000, // a slot claimed more than 30 s late was missed
    taskLeaseMs: 3_600_000, // the clock jumps minutes at a time: keep leases longer than any jump
  });

/** Polls a schedule's ledger until `done` holds for it (at most 10 s of real time). */
async function ledgerOf(runner: DefaultRunner, name: string, done: (rows: number) => boolean) {
  for (let i = 0; i < 500; i += 1) {
    const rows = (await runner.getCronExecutionHistory(name)).reverse();
    if (done(rows.length)) return rows;
    await sleep(20);
  }
  throw new Error(`schedule ${name} did not reach the expected ledger state in time`);
}

/** Ledger rows as text, runs of one status folded: "00:02–00:10 handed_off/catchup ×9". */
function summarise(rows: Awaited<ReturnType<typeof ledgerOf>>): string {
  const runs: { first: Date; last: Date; what: string; count: number }[] = [];
  for (const r of rows) {
    const what = r.status === 'missed' ? `missed (one row for ${r.missedCount} slots)` : `${r.status}/${r.source}`;
    const run = runs.at(-1);
    if (run?.what === what && r.status !== 'missed')
      Object.assign(run, { last: r.scheduledTime, count: run.count + 1 });
    else runs.push({ first: r.scheduledTime, last: r.scheduledTime, what, count: 1 });
  }
  return runs
    .map((run) =>
      run.count > 1 ? `${hm(run.first)}–${hm(run.last)} ${run.what} ×${run.count}` : `${hm(run.first)} ${run.what}`,
    )
    .join(', ');
}

try {
  console.log('1. catch-up policies, every minute ("* * * * *"), misfire threshold 30 s\n');
  const policies = ['skip', 'run_once', 'run_all'] as const;
  let runner = await open();
  for (const catchupPolicy of policies) {
    await runner.addCronSchedule({
      name: catchupPolicy,
      workflowName: 'quick',
      cronExpression: '* * * * *',
      catchupPolicy,
    });
  }
  await runner.start();
  clock.set(new Date('2026-01-01T00:01:00Z'));
  for (const name of policies) await ledgerOf(runner, name, (n) => n === 1);
  console.log(`  ${hms(clock.now())}  each schedule fired on time; then the runner stops (outage)`);
  await runner.shutdown();

  clock.set(new Date('2026-01-01T00:10:45Z'));
  console.log(`  ${hms(clock.now())}  a new runner starts: slots 00:02 to 00:10 (9) were missed\n`);
  runner = await open();
  await runner.start();
  const expectedRows = { skip: 2, run_once: 3, run_all: 10 };
  for (const name of policies) {
    const rows = await ledgerOf(runner, name, (n) => n === expectedRows[name]);
    const ran = rows.filter((r) => r.source === 'catchup' && r.status === 'handed_off').length;
    console.log(`  ${name.padEnd(8)}  ran ${ran} of the 9 missed slots   ledger: ${summarise(rows.slice(1))}`);
  }
  clock.set(new Date('2026-01-01T00:11:00Z'));
  for (const name of policies) await ledgerOf(runner, name, (n) => n === expectedRows[name] + 1);
  console.log(`\n  ${hms(clock.now())}  every policy is back on its cadence: 00:11 fired on time for all three`);
  for (const name of policies) await runner.setCronScheduleEnabled(name, false);

  console.log('\n2. overlapPolicy "skip": a run still in progress makes the next occurrences skip\n');
  await runner.addCronSchedule({
    name: 'no-overlap',
    workflowName: 'slow',
    cronExpression: '* * * * *',
    overlapPolicy: 'skip',
  });
  for (const minute of [12, 13, 14]) {
    clock.set(new Date(`2026-01-01T00:${minute}:00Z`));
    await ledgerOf(runner, 'no-overlap', (n) => n === minute - 11);
  }
  console.log(
    `  00:12 fired and is still running at 00:14: ${summarise(await ledgerOf(runner, 'no-overlap', () => true))}`,
  );
  openGate();
  const [first] = await ledgerOf(runner, 'no-overlap', () => true);
  while ((await runner.getExecutionStatus(first!.pipelineExecutionId!)) !== 'completed') await sleep(20);
  clock.advance(MINUTE);
  const rows = await ledgerOf(runner, 'no-overlap', (n) => n === 4);
  console.log(`  00:12's pipeline completed; at 00:15 it fires again:  ${summarise(rows)}`);
  await runner.shutdown();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
