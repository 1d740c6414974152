/**
 * The root README's TypeScript examples run as written.
 *
 * The rule (one source): every ```ts block of README.md is a file of `examples/readme/`. The block
 * is preceded by `<!-- example: examples/readme/<file>.ts -->` and shows the file's code: the
 * lines between `// #region readme` and `// #endregion readme` (regions joined in order), or the
 * whole file without regions. Edit the file, then `npm run readme:examples` rewrites the README's
 * blocks (scripts/readme-examples.ts); the first test here fails while a block and its file differ.
 * Code outside the regions runs but is not shown: imports of `helpers.ts` (the application code the
 * snippets call: loadRows, publish, the `nightly` workflow…), a runner for a client-only snippet,
 * clean-up. No `declare`: every file runs.
 *
 * Running: each file runs as `node --import tsx --conditions=source <file>`, in a fresh folder
 * (so `sqlite:./orrery.db` is a fresh file) with DATABASE_URL set to a fresh SQLite file there,
 * or, for the PostgreSQL examples, to a fresh database (and DIRECT_DATABASE_URL, PgBouncer's
 * example going through the suite's PgBouncer). An example either exits 0 by itself, or is
 * long-lived (the main example, a worker, a server, a dashboard): it prints a line once ready and
 * exits 0 on SIGTERM, after a graceful shutdown. The test waits for that line, makes its requests
 * and sends SIGTERM. Every process is killed past its deadline. The examples run concurrently.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readmeBlocks, shownCode, syncedReadme } from '../scripts/readme-examples.js';
import { httpRequest } from './support/http.js';
import { pgbouncerUrl, postgresUrl } from './support/postgres.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const EXAMPLES = join(ROOT, 'examples', 'readme');
/** Files of examples/readme/ that are not examples (no README block shows them). */
const NOT_EXAMPLES = ['helpers.ts'];

const tmp = join(ROOT, '.tmp');
mkdirSync(tmp, { recursive: true });
const folder = mkdtempSync(join(tmp, 'readme-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** A running example: its output so far, and its exit. */
interface Example {
  child: ChildProcess;
  /** The DATABASE_URL it was given. */
  database: string;
  output(): string;
  /** Resolves with the first match of `pattern` in stdout; rejects if the example exits first. */
  printed(pattern: RegExp): Promise<RegExpExecArray>;
  exited: Promise<number | null>;
  /** The exit code, with the output attached when it is not 0 (a failure shows what it printed). */
  result(): Promise<{ code: number | null; output: string }>;
}

/**
 * Starts `examples/readme/<file>` in a fresh folder of its own (its working directory), with
 * DATABASE_URL a fresh SQLite file there unless `env` gives one. Past `timeoutMs` it is killed.
 */
function start(file: string, env: Record<string, string> = {}, timeoutMs = 30_000): Example {
  const cwd = mkdtempSync(join(folder, `${file.replace(/\.ts$/, '')}-`));
  const database = env.DATABASE_URL ?? `sqlite:${join(cwd, 'orrery.db')}`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', join(EXAMPLES, file)], {
    cwd,
    env: { ...process.env, ...env, DATABASE_URL: database },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  child.stdout!.on('data', (chunk) => {
    stdout += String(chunk);
    for (const listener of listeners) listener();
  });
  child.stderr!.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const exited = once(child, 'close').then(([code]) => {
    clearTimeout(timer);
    for (const listener of listeners) listener();
    return code as number | null;
  });
  const output = () => `${stdout}\n${stderr}`;
  return {
    child,
    database,
    output,
    exited,
    printed: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(stdout);
          if (match !== null) {
            listeners.delete(check);
            resolve(match);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            listeners.delete(check);
            reject(new Error(`${file} exited before printing ${pattern}:\n${output()}`));
          }
        };
        listeners.add(check);
        check();
      }),
    result: async () => {
      const code = await exited;
      return { code, output: code === 0 ? '' : output() };
    },
  };
}

/** Sends SIGTERM and returns the exit code (with the output when it is not 0). */
async function stop(example: Example) {
  if (example.child.exitCode === null && example.child.signalCode === null) example.child.kill('SIGTERM');
  return example.result();
}

const OK = { code: 0, output: '' };

describe('README.md', () => {
  it('shows in each ```ts block the code of its file in examples/readme/, and every example has a block', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const blocks = readmeBlocks(readme);
    expect(blocks.length).toBeGreaterThanOrEqual(13);
    expect(blocks.filter((block) => block.file === undefined).map((block) => `README.md:${block.line}`)).toEqual([]);
    for (const block of blocks) {
      const code = shownCode(readFileSync(join(ROOT, block.file!), 'utf8'));
      expect(block.code, `README.md:${block.line} differs from ${block.file}: run npm run readme:examples`).toBe(code);
    }
    expect(syncedReadme(readme, ROOT)).toBe(readme);
    const files = readdirSync(EXAMPLES).filter((name) => name.endsWith('.ts') && !NOT_EXAMPLES.includes(name));
    expect(new Set(blocks.map((block) => block.file))).toEqual(new Set(files.map((name) => `examples/readme/${name}`)));
    expect(readme).toContain('"type": "module"');
  });

  it('has examples that type-check strictly as a user would compile them (exported types, NodeNext)', () => {
    const check = join(folder, 'typecheck');
    mkdirSync(check);
    const tsconfig = {
      compilerOptions: {
        target: 'ES2022',
        lib: ['ES2023'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ['node'],
      },
      include: [join(EXAMPLES, '*.ts')],
    };
    writeFileSync(join(check, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
    const tsc = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', check], {
      cwd: check,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(`${tsc.stdout}${tsc.stderr}`).toBe('');
    expect(tsc.status).toBe(0);
  }, 60_000);
});

describe.concurrent('README examples, run', () => {
  /** A fresh database on the suite's PostgreSQL server, for the examples that need PostgreSQL. */
  const database = `orrery_readme_${randomBytes(6).toString('hex')}`;
  const urlOf = (base: string) => {
    const url = new URL(base);
    url.pathname = `/${database}`;
    return url.toString();
  };
  const admin = () => new pg.Client({ connectionString: postgresUrl() });

  beforeAll(async () => {
    const client = admin();
    await client.connect();
    await client.query(`CREATE DATABASE "${database}"`).finally(() => client.end());
  });

  afterAll(async () => {
    const client = admin();
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`).finally(() => client.end());
  });

  it('nightly-report.ts (the main example) runs the workflow, then shuts down on SIGTERM', async () => {
    const example = start('nightly-report.ts');
    await example.printed(/^completed 12$/m);
    expect(await stop(example)).toEqual(OK);
  });

  it('sync-schedules.ts creates the three schedules', async () => {
    const example = start('sync-schedules.ts');
    expect(await example.result()).toEqual(OK);
    expect(example.output()).toContain("[ 'billing.nightly', 'billing.month-end', 'billing.reconcile' ] [] [] []");
  });

  it('worker.ts and server.ts: a request runs the workflow on the worker; an unknown workflow is a 400', async () => {
    const worker = start('worker.ts');
    try {
      await worker.printed(/^worker .+ started$/m);
      const server = start('server.ts', { DATABASE_URL: worker.database, PORT: '0' });
      try {
        const [, port] = await server.printed(/^listening on http:\/\/127\.0\.0\.1:(\d+)$/m);
        const base = `http://127.0.0.1:${port}`;
        const ran = await httpRequest(`${base}/nightly-report?day=2026-11-23`);
        expect(ran.status).toBe(200);
        expect(ran.headers['content-type']).toBe('application/json');
        expect(JSON.parse(ran.body)).toMatchObject({ status: 'completed', total: 12 });

        const unknown = await httpRequest(`${base}/no-such-workflow`);
        expect(unknown.status).toBe(400);
        expect(unknown.headers['content-type']).toBe('application/json');
        expect(JSON.parse(unknown.body).error).toMatch(/no-such-workflow.*known: nightly-report/);

        // Still serving; the same day is the same execution (idempotency key).
        const again = await httpRequest(`${base}/nightly-report?day=2026-11-23`);
        expect(again.status).toBe(200);
        expect(JSON.parse(again.body).id).toBe(JSON.parse(ran.body).id);
        expect(server.output()).toMatch(/^nightly-report [0-9a-f]+ \d{4}-/m); // listWorkflows
      } finally {
        expect(await stop(server)).toEqual(OK);
      }
    } finally {
      expect(await stop(worker)).toEqual(OK);
    }
  });

  it('sync-customer.ts and onboarding.ts (definitions) load and exit', async () => {
    const [customer, onboarding] = [start('sync-customer.ts'), start('onboarding.ts')];
    expect(await customer.result()).toEqual(OK);
    expect(await onboarding.result()).toEqual(OK);
  });

  it('priority.ts lists the queued pipelines with why they wait, and the group', async () => {
    const example = start('priority.ts');
    expect(await example.result()).toEqual(OK);
    expect(example.output()).toContain("kind: 'concurrency'");
    expect(example.output()).toMatch(
      /group: 'sync-customer\/customerId=acme',\s+workflowName: 'sync-customer',\s+active: 2,\s+queued: 2,\s+limit: 2/,
    );
  });

  it('order.ts waits for the signal, then ships', async () => {
    const example = start('order.ts');
    expect(await example.result()).toEqual(OK);
    expect(example.output()).toContain('shipped o-42, approved by ada');
    expect(example.output()).toContain('completed {"by":"ada"}');
  });

  it('sync-all.ts maps the sync over the customers: the results in item order, the instances counted', async () => {
    const example = start('sync-all.ts');
    expect(await example.result()).toEqual(OK);
    expect(example.output()).toContain('synced [ 4, 6, 7 ]');
    expect(example.output()).toContain('{ total: 3, completed: 3, failed: 0, running: 0 }');
  });

  it('several-instances.ts (schema tenant_a) and pgbouncer.ts (through PgBouncer) run on PostgreSQL', async () => {
    const instances = start('several-instances.ts', { DATABASE_URL: urlOf(postgresUrl()) });
    expect(await instances.result()).toEqual(OK);
    expect(instances.output()).toMatch(/^completed 12$/m);
    const pooled = start('pgbouncer.ts', {
      DATABASE_URL: urlOf(pgbouncerUrl()),
      DIRECT_DATABASE_URL: urlOf(postgresUrl()),
    });
    expect(await pooled.result()).toEqual(OK);
    expect(pooled.output()).toMatch(/^completed 12$/m);
    const client = new pg.Client({ connectionString: urlOf(postgresUrl()) });
    await client.connect();
    try {
      // Each example wrote its own schema: tenant_a, and public through PgBouncer.
      const { rows } = await client.query<{ schema: string }>(
        `SELECT table_schema AS schema FROM information_schema.tables
         WHERE table_name = 'pipeline_executions' ORDER BY table_schema`,
      );
      expect(rows.map((row) => row.schema)).toEqual(['public', 'tenant_a']);
    } finally {
      await client.end();
    }
  });

  it('tracing.ts prints the request span, orrery.execute and every orrery.task in one trace', async () => {
    const example = start('tracing.ts');
    expect(await example.result()).toEqual(OK);
    const spans = [...example.output().matchAll(/traceId: '([0-9a-f]{32})',[\s\S]*?name: '([^']+)'/g)].map((m) => ({
      traceId: m[1],
      name: m[2],
    }));
    const request = spans.find((span) => span.name === 'POST /reports');
    expect(request).toBeDefined();
    const inTrace = spans.filter((span) => span.traceId === request!.traceId).map((span) => span.name);
    expect(inTrace.filter((name) => name === 'orrery.task')).toHaveLength(3);
    expect(inTrace).toContain('orrery.execute');
  });

  it('dashboard.ts serves the dashboard to the bearer of the token only', async () => {
    const port = await freePort();
    const example = start('dashboard.ts', { PORT: String(port), ORRERY_ADMIN_TOKEN: 'secret-token' });
    try {
      await example.printed(/^http:\/\/127\.0\.0\.1:\d+\/orrery\/$/m);
      const url = `http://127.0.0.1:${port}/orrery/`;
      expect((await httpRequest(url)).status).toBe(401);
      const page = await httpRequest(url, { headers: { Authorization: 'Bearer secret-token' } });
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      const rebound = await httpRequest(url, {
        headers: { Host: 'evil.example', Authorization: 'Bearer secret-token' },
      });
      expect(rebound.status).toBe(403); // allowedHosts
    } finally {
      expect(await stop(example)).toEqual(OK);
    }
  });

  it('dashboard-basic-auth.ts asks a browser for a password: 401 with WWW-Authenticate, then 200', async () => {
    const example = start('dashboard-basic-auth.ts', { PORT: '0', ORRERY_ADMIN_PASSWORD: 'hunter2' });
    try {
      const [, port] = await example.printed(/"port":(\d+)/);
      const url = `http://127.0.0.1:${port}/`;
      const basic = (credentials: string) => ({
        Authorization: `Basic ${Buffer.from(credentials).toString('base64')}`,
      });
      for (const headers of [{}, basic('ops:wrong'), basic('admin:hunter2')]) {
        const refused = await httpRequest(url, { headers });
        expect(refused.status).toBe(401);
        expect(refused.headers['www-authenticate']).toBe('Basic realm="orrery"');
      }
      const page = await httpRequest(url, { headers: basic('ops:hunter2') });
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
    } finally {
      expect(await stop(example)).toEqual(OK);
    }
  });
});

/** A TCP port free now on 127.0.0.1 (dashboard.ts must know its port before listening: allowedHosts names it). */
async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}
