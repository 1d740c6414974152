import { DefaultRunner, type DefaultRunnerConfig, defineWorkflow, NonRetryableError } from '@orreryjs/runner';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../test/support/postgres.js';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import type { Dashboard } from '../src/index.js';

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

/** An order: request → approval (a wait task: the signal `approved`, for at most a day) → ship. */
export const order = defineWorkflow({
  name: 'order',
  tasks: [
    { id: 'request', run: () => {} },
    { id: 'approval', dependsOn: ['request'], waitFor: { signal: 'approved', timeoutMs: 86_400_000 } },
    { id: 'ship', dependsOn: ['approval'], run: (ctx) => void ctx.set('shipped', true) },
  ],
});

/** The origin the tests address a dashboard at through `fetch`. */
export const ORIGIN = 'http://dashboard.test';

/** The CSRF token a page of the dashboard embeds. */
export async function csrfOf(dashboard: Dashboard, base = '/'): Promise<string> {
  const page = await (await dashboard.fetch(new Request(`${ORIGIN}${base}`))).text();
  const token = /<meta name="orrery-csrf" content="([^"]+)">/.exec(page)?.[1];
  if (token === undefined) throw new Error('the page embeds no CSRF token');
  return token;
}

/** Sends `body` as JSON to the dashboard (POST unless told otherwise; DELETE has no body). */
export function post(
  dashboard: Dashboard,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  method = 'POST',
): Promise<Response> {
  return dashboard.fetch(
    new Request(`${ORIGIN}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: method === 'DELETE' ? null : JSON.stringify(body),
    }),
  );
}

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
