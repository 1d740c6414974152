import { DefaultRunner } from '@orreryjs/runner';
import { nightly } from './helpers.js';

// #region readme
const runner = await DefaultRunner.create({
  database: process.env.DATABASE_URL ?? 'postgres://app@db.internal:5432/app',
  schema: 'tenant_a',            // optional: one schema per tenant
  workflows: [nightly],
});
// #endregion readme
await runner.start();
const result = await runner.execute('nightly-report');
console.log(result.status, result.finalContext.total); // completed 12
await runner.shutdown();
