import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { ConfigurationError } from '@orreryjs/runner';
import { Hono } from 'hono';
import { mountActions, mountReadApi } from './api.js';
import { APP_CSS, APP_ICON, APP_JS } from './assets.js';
import type { DashboardClient } from './client.js';
import { ChangeWatcher } from './events.js';
import { checkHost, checkOrigin, resolveAllowedHosts } from './host-guard.js';
import { html } from './html.js';
import { toHttpError } from './http-errors.js';
import { parseStatus, parseWindow } from './input.js';
import { layout, type PageContext } from './layout.js';
import { renderRunners, renderWorkflows } from './page-catalog.js';
import { renderExecutionDetail, renderExecutions } from './page-executions.js';
import { renderOverview } from './page-overview.js';
import { renderScheduleDetail, renderSchedules } from './page-schedules.js';

/** Options of {@link createDashboard}. */
export interface DashboardOptions {
  /**
   * What the dashboard reads and acts through: an `OrreryClient`, or a `DefaultRunner` (which
   * is one, and whose own `health()` the overview then shows).
   */
  client: DashboardClient;
  /**
   * Where the dashboard is mounted; links and the API live under it.
   * @default '/'
   */
  basePath?: string;
  /**
   * Refuses every action (403) and hides the buttons.
   * @default false
   */
  readOnly?: boolean;
  /**
   * Decides whether a request may proceed; `false` answers 401, and a `Response` is sent
   * as it is (a 401 with `WWW-Authenticate: Basic` makes a browser ask for credentials).
   * Called for every request, pages and API alike, after the `Host` check.
   * Default: allow (protect the mount point yourself, or pass this).
   */
  authorize?: (request: Request) => boolean | Response | Promise<boolean | Response>;
  /**
   * The `Host` values the dashboard answers to, each a host name or address with an optional
   * port (`'ops.example.com'`, any port; `'127.0.0.1:4600'`, that port only; IPv6 in
   * brackets, `'[::1]:4600'`). Any other Host gets 403, and so does an action whose `Origin`
   * names neither the request's Host nor one of these: a page on another site whose name
   * was made to resolve to this server (DNS rebinding) cannot read or act. Left out, every
   * Host is answered and an action's Origin must match the Host it was sent to. Behind a
   * proxy that rewrites `Host`, list the public name too.
   * @default undefined (any Host)
   */
  allowedHosts?: readonly string[];
}

/** A mounted dashboard: one handler for Fetch-API servers and one for node:http. */
export interface Dashboard {
  /** Serves a Fetch-API request (Hono, Bun, Deno, Next route handlers). */
  fetch(request: Request): Promise<Response>;
  /** Serves a node:http request (node:http, Express, Fastify, Koa); Express's mount path is honoured. */
  handle(req: IncomingMessage, res: ServerResponse): void;
}

/** The header every state-changing request must carry, set to the token the pages embed. */
export const CSRF_HEADER = 'X-Orrery-Csrf';

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

function normalizeBase(basePath: string): string {
  if (!basePath.startsWith('/') || /[?#\s]/.test(basePath)) {
    throw new ConfigurationError(`basePath "${basePath}" must be a path starting with "/", such as "/orrery".`);
  }
  return basePath.endsWith('/') ? basePath : `${basePath}/`;
}

function sameToken(given: string | null, expected: Buffer): boolean {
  if (given === null) return false;
  const buffer = Buffer.from(given);
  return buffer.length === expected.length && timingSafeEqual(buffer, expected);
}

/**
 * Builds the operator dashboard: server-rendered pages, the JSON API under `{basePath}api/`
 * and live updates over server-sent events, reading and acting through `client`.
 * Every request must carry a `Host` listed in `allowedHosts` (when given) and goes through
 * `authorize`; every state-changing request also needs an `Origin` (when the client sends
 * one) naming that Host or an allowed one, and the `X-Orrery-Csrf` header with the token the
 * pages embed (else 403), and is refused with 403 in read-only mode.
 * @throws ConfigurationError for a basePath that is not a path, or allowedHosts that is not
 * a non-empty list of hosts.
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const { client, readOnly = false, authorize } = options;
  const base = normalizeBase(options.basePath ?? '/');
  const allowedHosts = resolveAllowedHosts(options.allowedHosts);
  const csrfToken = randomBytes(24).toString('base64url');
  const expected = Buffer.from(csrfToken);
  const watcher = new ChangeWatcher(client);
  const now = () => new Date();

  const app = new Hono({ strict: false });
  const routes = new Hono({ strict: false });
  const context = (url: string): PageContext => ({ client, base, csrfToken, readOnly, now: now(), url: new URL(url) });

  app.use('*', async (c, next) => {
    // Host and Origin first: a rebound name never reaches authorize, which could otherwise
    // make the browser ask for credentials on the attacker's behalf.
    const url = new URL(c.req.url);
    const method = c.req.method;
    const isAction = method !== 'GET' && method !== 'HEAD';
    const misdirected =
      checkHost(url, allowedHosts) ?? (isAction ? checkOrigin(c.req.header('origin'), url, allowedHosts) : undefined);
    if (misdirected !== undefined) {
      return c.json({ error: { code: misdirected.code, message: misdirected.message } }, misdirected.status);
    }
    if (authorize !== undefined) {
      const verdict = await authorize(c.req.raw);
      if (verdict instanceof Response) return verdict;
      if (!verdict) {
        return c.json({ error: { code: 'UNAUTHORIZED', message: 'Not authorised to use this dashboard.' } }, 401);
      }
    }
    if (isAction) {
      if (readOnly) {
        return c.json(
          { error: { code: 'READ_ONLY', message: 'This dashboard is read-only: actions are disabled.' } },
          403,
        );
      }
      if (!sameToken(c.req.header(CSRF_HEADER) ?? null, expected)) {
        return c.json(
          {
            error: { code: 'CSRF', message: `Missing or wrong ${CSRF_HEADER} header: reload the page and try again.` },
          },
          403,
        );
      }
    }
    await next();
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Referrer-Policy', 'same-origin');
    if (c.res.headers.get('content-type')?.startsWith('text/html')) {
      c.header('Content-Security-Policy', CSP);
      c.header('X-Frame-Options', 'DENY');
    }
  });

  routes.get('/assets/app.css', (c) =>
    c.body(APP_CSS, 200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'no-cache' }),
  );
  routes.get('/assets/app.js', (c) =>
    c.body(APP_JS, 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' }),
  );
  routes.get('/assets/icon.svg', (c) =>
    c.body(APP_ICON, 200, { 'content-type': 'image/svg+xml', 'cache-control': 'max-age=86400' }),
  );
  mountReadApi(routes, client, watcher, now);
  mountActions(routes, client, base);

  routes.get('/', async (c) => c.html((await renderOverview(context(c.req.url))).value));
  routes.get('/schedules', async (c) =>
    c.html((await renderSchedules(context(c.req.url), parseWindow(new URL(c.req.url).searchParams, 50))).value),
  );
  routes.get('/schedules/:idOrName', async (c) => {
    const ctx = context(c.req.url);
    return c.html(
      (await renderScheduleDetail(ctx, c.req.param('idOrName'), parseWindow(ctx.url.searchParams, 100))).value,
    );
  });
  routes.get('/executions', async (c) => {
    const ctx = context(c.req.url);
    const q = ctx.url.searchParams;
    const filter = {
      status: parseStatus(q.get('status')),
      workflowName: q.get('workflow') || undefined,
      schedule: q.get('schedule') || undefined,
    };
    return c.html((await renderExecutions(ctx, filter, parseWindow(q, 50))).value);
  });
  routes.get('/executions/:id', async (c) =>
    c.html((await renderExecutionDetail(context(c.req.url), c.req.param('id'))).value),
  );
  routes.get('/workflows', async (c) => c.html((await renderWorkflows(context(c.req.url))).value));
  routes.get('/runners', async (c) => c.html((await renderRunners(context(c.req.url))).value));

  routes.onError((err, c) => {
    const e = toHttpError(err);
    if (new URL(c.req.url).pathname.startsWith(`${base}api/`))
      return c.json({ error: { code: e.code, message: e.message } }, e.status);
    const page = layout(
      context(c.req.url),
      '',
      'Error',
      html`<h1>${e.status === 404 ? 'Not found' : 'Something went wrong'}</h1>
<div class="panel"><p>${e.message}</p><p class="small muted mono">${e.code}</p></div>`,
    );
    return c.html(page.value, e.status);
  });
  routes.notFound((c) =>
    c.json({ error: { code: 'NOT_FOUND', message: `No dashboard route for ${new URL(c.req.url).pathname}.` } }, 404),
  );

  app.route(base === '/' ? '/' : base.slice(0, -1), routes);

  const fetch = async (request: Request): Promise<Response> => app.fetch(request);
  const listener = getRequestListener(fetch, { overrideGlobalObjects: false });
  return {
    fetch,
    handle(req, res) {
      const original = (req as IncomingMessage & { originalUrl?: string }).originalUrl;
      if (typeof original === 'string') req.url = original;
      void listener(req, res);
    },
  };
}
