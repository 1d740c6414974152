import { DefaultRunner } from '@orreryjs/runner';
import { nightly } from './helpers.js';

// #region readme
const runner = await DefaultRunner.create({
  database: process.env.DATABASE_URL ?? 'postgres://app@pgbouncer.internal:6432/app', // through the pooler
  preparedStatements: false, // send unnamed statements only: PgBouncer 1.18 cannot route named ones
  listen: { database: process.env.DIRECT_DATABASE_URL ?? 'postgres://app@db.internal:5432/app' }, // LISTEN needs a session: a direct URL
  workflows: [nightly],
});
// #endregion readme
await runner.start();
const result = await runner.execute('nightly-report');
console.log(result.status, result.finalContext.total); // completed 12
await runner.shutdown();
