/**
 * Backfill: run a schedule's past slots, once. `npx tsx --conditions=source examples/backfill.ts`
 *
 * A daily schedule added today has no history. backfillCronSchedule() hands off every slot of
 * a past range that has no ledger row yet, with the same deterministic occurrence ids as the
 * scheduler, so running it a second time over the same range creates nothing.
 */
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';

const rollup = defineWorkflow({
  name: 'daily-rollup',
  tasks: [
    { id: 'aggregate', run: (ctx) => void ctx.set('day', String(ctx.get('scheduled_time')).slice(0, 10)) },
    { id: 'store', dependsOn: ['aggregate'], run: (ctx) => void ctx.set('stored', true) },
  ],
});

const runner = await DefaultRunner.create({ database: 'sqlite::memory:', workflows: [rollup] });
await runner.addCronSchedule({ name: 'daily-rollup', workflowName: 'daily-rollup', cronExpression: '0 3 * * *' });
await runner.start();

const today = new Date(new Date().toISOString().slice(0, 10));
const range = { start: new Date(today.getTime() - 7 * 86_400_000), end: today }; // the last 7 days, [start, end)
console.log(`backfilling 03:00 UTC daily over [${range.start.toISOString()}, ${range.end.toISOString()})`);

const first = await runner.backfillCronSchedule('daily-rollup', range);
console.log(`first backfill:  created ${first.created}, existing ${first.existing}`);
const second = await runner.backfillCronSchedule('daily-rollup', range);
console.log(`second backfill: created ${second.created}, existing ${second.existing}`);

// Each occurrence id is also its pipeline's idempotency key: execute() with it waits for that
// pipeline instead of starting another one.
const ledger = (await runner.getCronExecutionHistory('daily-rollup')).reverse();
for (const row of ledger) {
  const result = await runner.execute('daily-rollup', {}, { idempotencyKey: row.id, timeoutMs: 10_000 });
  const day = result.finalContext.day;
  console.log(
    `  ${row.scheduledTime.toISOString()}  ${row.source} ${row.status}  pipeline ${result.status} (day ${day})`,
  );
}
await runner.shutdown();
