// #region readme
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';
import { listCustomers, pullFromCrm } from './helpers.js'; // your own code

export const syncAll = defineWorkflow({
  name: 'sync-all',
  tasks: [
    { id: 'customers', run: async (ctx) => void ctx.set('customers', await listCustomers()) },
    {
      id: 'sync',
      dependsOn: ['customers'],
      // One instance per customer, each claimed, leased and retried on its own; ctx is read-only here.
      map: (ctx) => ctx.get<string[]>('customers') ?? [],
      retry: { maxAttempts: 3 },
      run: (_ctx, info) => pullFromCrm(String(info.item)), // the item's result
    },
    // Runs once every item has: `sync` holds their results, in item order.
    { id: 'report', dependsOn: ['sync'], run: (ctx) => console.log('synced', ctx.get('sync')) },
  ],
});

const runner = await DefaultRunner.create({ database: process.env.DATABASE_URL, workflows: [syncAll] });
await runner.start();
const result = await runner.execute('sync-all');
console.log(result.tasks.find((task) => task.taskId === 'sync')?.instances);
// synced [ 4, 6, 7 ]
// { total: 3, completed: 3, failed: 0, running: 0 }
await runner.shutdown();
// #endregion readme
