// Type-checked (never run) as an ES module: every package's public types, strict, skipLibCheck false.
import { buildProgram, runCli } from '@orreryjs/cli';
import { Context, ManualClock, OrreryError } from '@orreryjs/core';
import { nextOccurrences, validateTimezone } from '@orreryjs/cron';
import { createDashboard } from '@orreryjs/dashboard';
import { openPostgresStorage } from '@orreryjs/postgres-adapter';
import { DefaultRunner, defineWorkflow, isOrreryError, type PipelineResult } from '@orreryjs/runner';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';

const greet = defineWorkflow({
  name: 'greet',
  tasks: [
    { id: 'name', run: (ctx) => void ctx.set('name', 'world') },
    { id: 'say', dependsOn: ['name'], run: (ctx) => void ctx.set('greeting', `hello ${String(ctx.get('name'))}`) },
  ],
});

const runner = await DefaultRunner.create({ database: 'sqlite::memory:', workflows: [greet] });
await runner.start();
const result: PipelineResult = await runner.execute('greet');
const status: 'completed' | string = result.status;
await runner.shutdown({ timeoutMs: 1_000 });

const dashboard = createDashboard({ client: runner, basePath: '/ops', readOnly: true });

export const surface = {
  status,
  dashboard,
  buildProgram,
  runCli,
  Context,
  ManualClock,
  OrreryError,
  isOrreryError,
  next: nextOccurrences('0 9 * * MON', { timezone: validateTimezone('Europe/London') }),
  openPostgresStorage,
  openSqliteStorage,
};
