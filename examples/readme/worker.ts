// worker.ts: the process that has the task code
import { DefaultRunner } from '@orreryjs/runner';
import { nightly } from './helpers.js'; // defineWorkflow({ name: 'nightly-report', … })

const worker = await DefaultRunner.create({ database: process.env.DATABASE_URL, workflows: [nightly] });
await worker.start(); // stores nightly-report in the workflows table, runs its tasks and schedules
process.on('SIGTERM', () => worker.shutdown({ timeoutMs: 30_000 }));
console.log(`worker ${worker.runnerId} started`);
