import { DefaultRunner } from '@orreryjs/runner';
import { nightly } from './helpers.js';

// #region readme
const runner = await DefaultRunner.create({ database: 'sqlite:./orrery.db', workflows: [nightly] });
const plan = await runner.syncCronSchedules(
  [
    { name: 'billing.nightly', workflowName: 'nightly-report', cronExpression: '30 2 * * *', timezone: 'Europe/London' },
    { name: 'billing.month-end', workflowName: 'nightly-report', cronExpression: '0 0 18 L * ?' },
    { name: 'billing.reconcile', workflowName: 'nightly-report', cronExpression: '@every 5m' },
  ],
  { prune: 'pause', scope: { namePrefix: 'billing.' }, dryRun: false },
);
// e.g. { created: ['billing.reconcile'], updated: [{ name: 'billing.nightly', changed: ['cronExpression'] }],
//   unchanged: ['billing.month-end'], pruned: ['billing.old-export'] }
console.log(plan.created, plan.updated, plan.unchanged, plan.pruned);
// #endregion readme
await runner.shutdown();
