// #region readme
import { defineWorkflow, OrreryClient } from '@orreryjs/runner';
import { escalate, requestApproval, ship } from './helpers.js'; // your own code

export const order = defineWorkflow({
  name: 'order',
  tasks: [
    { id: 'request', run: (ctx) => requestApproval(String(ctx.get('orderId'))) },
    // Waits, holding nothing, for the signal "approved" (at most a day).
    { id: 'approval', dependsOn: ['request'], waitFor: { signal: 'approved', timeoutMs: 86_400_000 } },
    {
      id: 'ship',
      dependsOn: ['approval'],
      run: (ctx) => ship(String(ctx.get('orderId')), String((ctx.get('approval') as { by: string }).by)),
    },
    // A timeout fails the wait with SignalTimeoutError (never retried): this branch handles it.
    { id: 'escalate', dependsOn: ['approval'], trigger: 'one_failed', run: (ctx) => escalate(String(ctx.get('orderId'))) },
  ],
});
// #endregion readme

// Not in the README: the runner that registers `order` and runs its tasks (in production, a worker process).
const { DefaultRunner } = await import('@orreryjs/runner');
const worker = await DefaultRunner.create({ database: process.env.DATABASE_URL, workflows: [order] });
await worker.start();

// #region readme

const client = await OrreryClient.create({ database: process.env.DATABASE_URL });
const execution = await client.executeAsync('order', { orderId: 'o-42' });
// Later, from anywhere (a webhook, an admin page, `orrery executions signal <id> approved --payload '{"by":"ada"}'`):
await client.signal(execution.id, 'approved', { by: 'ada' });
// #endregion readme

const result = await execution.wait({ timeoutMs: 20_000 });
console.log(result.status, JSON.stringify(result.finalContext.approval)); // completed {"by":"ada"}
await client.close();
await worker.shutdown();
