import { defineWorkflow } from '@orreryjs/runner';
import { pullFromCrm } from './helpers.js'; // your own code

export const syncCustomer = defineWorkflow({
  name: 'sync-customer',
  // At most 2 pipelines per customer at once; others queue (oldest first).
  concurrency: { key: 'customerId', limit: 2 },
  priority: 0, // the default; higher is claimed first
  tasks: [
    {
      id: 'pull',
      run: async (ctx) => {
        ctx.set('rows', await pullFromCrm(String(ctx.get('customerId'))));
      },
    },
  ],
});
