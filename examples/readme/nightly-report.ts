import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';
import { loadRows, publish, sum } from './helpers.js'; // your own code

const nightly = defineWorkflow({
  name: 'nightly-report',
  tasks: [
    { id: 'extract', run: async (ctx) => { ctx.set('rows', await loadRows()); } },
    { id: 'summarise', dependsOn: ['extract'], run: (ctx) => { ctx.set('total', sum(ctx.get<number[]>('rows') ?? [])); } },
    { id: 'publish', dependsOn: ['summarise'], retry: { maxAttempts: 5 }, run: publish },
  ],
});

const runner = await DefaultRunner.create({ database: 'sqlite:./orrery.db', workflows: [nightly] });
await runner.addCronSchedule({
  name: 'nightly',                 // re-adding it unchanged at every start-up is safe
  workflowName: 'nightly-report',
  cronExpression: '30 2 * * *',
  timezone: 'Europe/London',
});
await runner.start();
const result = await runner.execute('nightly-report', { day: '2026-11-22' }); // run one now and wait
process.on('SIGTERM', () => runner.shutdown({ timeoutMs: 30_000 }));
console.log(result.status, result.finalContext.total); // completed 12
