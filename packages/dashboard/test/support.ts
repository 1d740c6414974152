import { DefaultRunner, type DefaultRunnerConfig, defineWorkflow, NonRetryableError } from '@orreryjs/runner';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../test/support/postgres.js';
import { tempSqliteFile } from '../../../test/support/sqlite.js';

/** The backends the dashboard is checked against: one suite, two databases. */
export const BACKENDS: ReadonlyArray<{
  name: string;
  open(): { config: Pick<DefaultRunnerConfig, 'database' | 'schema'>; remove(): Promise<void> };
}> = [
  {
    name: 'sqlite',
    open: () => {
      const file = tempSqliteFile();
      return { config: { database: `sqlite:${file.filename}` }, remove: async () => file.remove() };
    },
  },
  {
    name: 'postgres',
    open: () => {
      const schema = freshSchemaName();
      return { config: { database: postgresUrl(), schema }, remove: () => dropSchema(schema) };
    },
  },
];

/** A schedule name that would run script if the dashboard did not escape it. */
export const HOSTILE_NAME = '<script>alert(1)</script>';

/** extract → transform → load, where `load` fails for good when the context says so (`fail`: true, or the error's message). */
export const etl = defineWorkflow({
  name: 'etl',
  description: 'Extract, transform, load',
  tasks: [
    { id: 'extract', run: (ctx) => void ctx.set('rows', 3) },
    { id: 'transform', dependsOn: ['extract'], run: (ctx) => void ctx.set('clean', true) },
    { id: 'audit', dependsOn: ['extract'], run: () => {} },
    {
      id: 'load',
      dependsOn: ['transform', 'audit'],
      run: (ctx) => {
        const fail = ctx.get('fail');
        if (typeof fail === 'string') throw new NonRetryableError(fail);
        if (fail === true) throw new NonRetryableError('warehouse refused the batch');
      },
    },
  ],
});

/** check → optional (skipped: its `when` returns false) → report (runs once optional is done, whatever its outcome). */
export const gated = defineWorkflow({
  name: 'gated',
  tasks: [
    { id: 'check', run: () => {} },
    { id: 'optional', dependsOn: ['check'], when: () => false, run: () => {} },
    { id: 'report', dependsOn: ['optional'], trigger: 'all_done', run: () => {} },
  ],
});

/** Resolves when `condition` holds, checking every 25 ms; rejects after `timeoutMs`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Creates a runner on the backend with the etl and gated workflows, without starting it. */
export function createRunner(
  config: Pick<DefaultRunnerConfig, 'database' | 'schema'>,
  extra: DefaultRunnerConfig = {},
): Promise<DefaultRunner> {
  // The tests backfill fixed 2024 ranges: keep the ledger (and so backfills) for 100 years.
  return DefaultRunner.create({
    ...config,
    workflows: [etl, gated],
    retention: { cronLedgerMs: 100 * 365 * 86_400_000 },
    ...extra,
  });
}
