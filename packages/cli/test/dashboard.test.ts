import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../../test/support/http.js';
import { expectOneLineError, orrery, orreryJson, startOrrery } from './support/cli.js';
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

/** The CSRF token the page at `url` embeds, read as a browser on the dashboard's own origin would. */
async function csrfOf(url: string): Promise<string> {
  const page = await (await fetch(url)).text();
  return /<meta name="orrery-csrf" content="([^"]+)">/.exec(page)?.[1] ?? '';
}

const isEnabled = () => orreryJson<{ enabled: boolean }>(['schedules', 'show', 'nightly'], { env }).enabled;

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

  it('answers only its own names: a rebound Host gets 403 for the page, the API and an action', async () => {
    const { url } = await startDashboard([]);
    const port = new URL(url).port;
    const csrf = await csrfOf(url);
    const forged = { Host: 'rebind.attacker.example' };
    const page = await httpRequest(url, { headers: forged });
    expect(page.status).toBe(403);
    expect(page.body).not.toContain('orrery-csrf');
    const refusal = JSON.parse(page.body) as { error: { code: string; message: string } };
    expect(refusal.error.code).toBe('HOST_NOT_ALLOWED');
    expect(refusal.error.message).toContain('"rebind.attacker.example"');
    expect(refusal.error.message).toContain('--allowed-host rebind.attacker.example');
    expect((await httpRequest(`${url}api/schedules`, { headers: forged })).status).toBe(403);
    const pause = await httpRequest(`${url}api/schedules/nightly/pause`, {
      method: 'POST',
      headers: { ...forged, 'X-Orrery-Csrf': csrf, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(pause.status).toBe(403);
    expect(isEnabled()).toBe(true);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
      const own = await httpRequest(url, { headers: { Host: host } });
      expect(own.status).toBe(200);
      expect(own.body).toContain('Overview');
    }
  });

  it('refuses an action whose Origin is another site, and takes one from its own origin', async () => {
    const { url } = await startDashboard([]);
    const port = new URL(url).port;
    const csrf = await csrfOf(url);
    const act = (action: string, origin: string) =>
      httpRequest(`${url}api/schedules/nightly/${action}`, {
        method: 'POST',
        headers: { Origin: origin, 'X-Orrery-Csrf': csrf, 'content-type': 'application/json' },
        body: '{}',
      });
    for (const origin of ['http://rebind.attacker.example', `http://rebind.attacker.example:${port}`, 'null']) {
      const refused = await act('pause', origin);
      expect(refused.status).toBe(403);
      expect((JSON.parse(refused.body) as { error: { code: string } }).error.code).toBe('ORIGIN_NOT_ALLOWED');
    }
    expect(isEnabled()).toBe(true);
    expect((await act('pause', `http://127.0.0.1:${port}`)).status).toBe(200);
    expect(isEnabled()).toBe(false);
    expect((await act('resume', `http://localhost:${port}`)).status).toBe(200);
    expect(isEnabled()).toBe(true);
  });

  it('answers a name given with --allowed-host, and on 0.0.0.0 its loopback names but not any Host', async () => {
    const { url } = await startDashboard(['--host', '0.0.0.0', '--allowed-host', 'ops.example.com']);
    const port = new URL(url).port;
    const local = `http://127.0.0.1:${port}/`;
    expect((await httpRequest(local, { headers: { Host: 'ops.example.com' } })).status).toBe(200);
    expect((await httpRequest(local, { headers: { Host: `localhost:${port}` } })).status).toBe(200);
    expect((await httpRequest(local, { headers: { Host: `rebind.attacker.example:${port}` } })).status).toBe(403);
  });

  it('refuses an --allowed-host that is not a host with one line, exit code 1', () => {
    const run = orrery(['dashboard', '--port', '0', '--allowed-host', 'https://ops.example.com/'], { env });
    expectOneLineError(run, 1, '--allowed-host "https://ops.example.com/" is not a host');
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
