/** Quickstart: a 3-task workflow on embedded SQLite. `npx tsx --conditions=source examples/quickstart.ts` */
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';

const report = defineWorkflow({
  name: 'nightly-report',
  tasks: [
    { id: 'extract', run: (ctx) => void ctx.set('rows', [3, 4, 5]) },
    { id: 'summarise', dependsOn: ['extract'], run: (ctx) => void ctx.set('total', sum(ctx.get('rows'))) },
    { id: 'publish', dependsOn: ['summarise'], retry: { maxAttempts: 5 }, run: (ctx) => void ctx.set('sent', true) },
  ],
});
const sum = (rows: unknown) => (rows as number[]).reduce((a, b) => a + b, 0);

// 'sqlite::memory:' keeps this example tidy; 'sqlite:./orrery.db' (the default) keeps state across restarts.
const runner = await DefaultRunner.create({ database: 'sqlite::memory:', workflows: [report] });
await runner.start();
const result = await runner.execute('nightly-report', { day: '2026-11-22' }); // run one now and wait for it
console.log(`${result.status}: ${JSON.stringify(result.finalContext)}`);
const schedule = await runner.addCronSchedule({
  name: 'nightly', // re-adding it unchanged at every start-up is safe
  workflowName: 'nightly-report',
  cronExpression: '30 2 * * *',
  timezone: 'Europe/London',
});
console.log(`schedule "${schedule.name}" next runs at ${schedule.nextRunAt?.toISOString()}`);
await runner.shutdown();
