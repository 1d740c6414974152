import { DefaultRunner, OrreryClient } from '@orreryjs/runner';
import { syncCustomer } from './sync-customer.js';

// A runner stores sync-customer in the workflows table for the client; not started, so everything stays pending.
const runner = await DefaultRunner.create({ database: 'sqlite:./orrery.db', workflows: [syncCustomer] });
const client = await OrreryClient.create({ database: 'sqlite:./orrery.db' });
for (let i = 0; i < 3; i++) await client.executeAsync('sync-customer', { customerId: 'acme' });

// #region readme
// An urgent run of one customer: claimed before every pipeline of a lower priority.
await client.executeAsync('sync-customer', { customerId: 'acme' }, { priority: 100 });
// A queued pipeline says why it waits.
for (const run of await client.listExecutions({ workflowName: 'sync-customer', status: 'pending' })) {
  console.log(run.executionId, run.waitingFor); // { kind: 'concurrency', group: 'sync-customer/customerId=acme', active: 2, limit: 2 }
}
console.log(await client.listConcurrencyGroups({ workflowName: 'sync-customer' })); // active, queued and limit per group
// #endregion readme
await client.close();
await runner.shutdown();
