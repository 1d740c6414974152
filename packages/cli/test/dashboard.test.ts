import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { orreryJson, startOrrery } from './support/cli.js';
import { migratedSqliteDatabase, registerFixtureWorkflows } from './support/database.js';

const database = migratedSqliteDatabase();
afterAll(() => database.remove());
const env = { ORRERY_DATABASE_URL: database.url };
beforeAll(async () => {
  await registerFixtureWorkflows(database.url);
  orreryJson(['schedules', 'add', 'report', '0 2 * * *', '--name', 'nightly'], { env });
});

const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** Starts `orrery dashboard --port 0 --json …` and resolves with the URL it printed. */
async function startDashboard(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = startOrrery(['dashboard', '--port', '0', '--json', ...args], { env });
  started.push(child);
  let out = '';
  let err = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const match = /"url": "([^"]+)"/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`dashboard exited (${code}): ${err}`)));
  });
  return { child, url };
}

describe('orrery dashboard', () => {
  it('serves the overview page on 127.0.0.1 and stops on SIGTERM', async () => {
    const { child, url } = await startDashboard([]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Overview');
    const schedules = await fetch(`${url}api/schedules`);
    expect(JSON.stringify(await schedules.json())).toContain('nightly');
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  });

  it('refuses an action with 403 in --read-only', async () => {
    const { child, url } = await startDashboard(['--read-only']);
    const page = await (await fetch(url)).text();
    const csrf = /<meta name="orrery-csrf" content="([^"]+)">/.exec(page)?.[1] ?? '';
    const response = await fetch(`${url}api/schedules/nightly/pause`, {
      method: 'POST',
      headers: { 'X-Orrery-Csrf': csrf, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ error: { code: 'READ_ONLY' } });
    expect(orreryJson<{ enabled: boolean }>(['schedules', 'show', 'nightly'], { env }).enabled).toBe(true);
    child.kill('SIGINT');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  });
});
