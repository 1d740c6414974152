// Type-checked (never run) as a CommonJS module: these imports compile to require().
import { Context } from '@orreryjs/core';
import { nextOccurrences } from '@orreryjs/cron';
import { openPostgresStorage } from '@orreryjs/postgres-adapter';
import { DefaultRunner, defineWorkflow, type PipelineResult } from '@orreryjs/runner';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';

const greet = defineWorkflow({ name: 'greet', tasks: [{ id: 'only', run: (ctx) => void ctx.set('done', true) }] });

export async function main(): Promise<PipelineResult> {
  const runner = await DefaultRunner.create({ database: 'sqlite::memory:', workflows: [greet] });
  await runner.start();
  try {
    return await runner.execute('greet');
  } finally {
    await runner.shutdown();
  }
}

export const surface = { Context, nextOccurrences, openPostgresStorage, openSqliteStorage };
