import { ConfigurationError } from '@orreryjs/runner';
import type { HttpError } from './http-errors.js';

// DNS rebinding: a page on attacker.example makes its own name resolve to 127.0.0.1, and the
// browser then treats a dashboard bound there as attacker.example's origin: it reads the page
// (and its CSRF token) and posts actions. The browser still sends `Host: attacker.example`,
// so a dashboard that answers only the names it is reached by, and only actions whose
// `Origin` is one of them, is out of reach. Non-browser clients (curl, scripts) send no
// `Origin`; they are let through, as the Host and CSRF checks still apply to them.

/** One entry of `allowedHosts`: a host name or address, and a port unless any port will do. */
export interface AllowedHost {
  hostname: string;
  port: string | undefined;
}

const EXAMPLE = 'such as "ops.example.com", "127.0.0.1:4600" or "[::1]:4600"';
// A host name (letters, digits, '-', '_', dots; what URL leaves after lowercasing and
// punycode) or a bracketed IPv6 address; refuses '*' and other wildcards, which URL accepts.
const HOSTNAME = /^(?:[a-z0-9_-]+\.)*[a-z0-9_-]+\.?$|^\[[0-9a-f:.]+\]$/;

/**
 * Checks `allowedHosts` and returns it parsed, or `undefined` (any Host) when not given.
 * @throws ConfigurationError for a value that is not a non-empty array of hosts.
 */
export function resolveAllowedHosts(entries: unknown): readonly AllowedHost[] | undefined {
  if (entries === undefined) return undefined;
  if (!Array.isArray(entries)) {
    throw new ConfigurationError(`allowedHosts must be an array of hosts, ${EXAMPLE}; got ${String(entries)}.`);
  }
  if (entries.length === 0) {
    throw new ConfigurationError(
      'allowedHosts is empty, which would refuse every request: list the names the dashboard is reached by, or leave it out to answer any Host.',
    );
  }
  return entries.map(parseAllowedHost);
}

function parseAllowedHost(entry: unknown): AllowedHost {
  // No scheme, path, query, user or whitespace: only host[:port] reaches URL.
  if (typeof entry === 'string' && /^[^/?#@\s\\]+$/.test(entry)) {
    let url: URL | undefined;
    try {
      url = new URL(`http://${entry}`);
    } catch {
      url = undefined;
    }
    if (url !== undefined && HOSTNAME.test(url.hostname)) {
      // URL drops a port 80 (http's default), as it does from the Host of a request.
      return { hostname: url.hostname, port: /:\d+$/.test(entry) ? url.port : undefined };
    }
  }
  throw new ConfigurationError(
    `allowedHosts entry ${JSON.stringify(entry)} is not a host: write a host name or IP address, optionally with a port, ${EXAMPLE} (an IPv6 address goes in brackets).`,
  );
}

function isAllowed(allowed: readonly AllowedHost[], hostname: string, port: string): boolean {
  return allowed.some((rule) => rule.hostname === hostname && (rule.port === undefined || rule.port === port));
}

/**
 * Refuses (403) a request whose `Host`, as the request's URL carries it, is not in `allowed`;
 * with `allowed` undefined, every Host is answered. `undefined` lets it through.
 */
export function checkHost(url: URL, allowed: readonly AllowedHost[] | undefined): HttpError | undefined {
  if (allowed === undefined || isAllowed(allowed, url.hostname, url.port)) return undefined;
  return {
    status: 403,
    code: 'HOST_NOT_ALLOWED',
    message: `This dashboard does not answer to the Host "${url.host}", so that DNS rebinding cannot reach it. To serve it under this name, add "${url.host}" to allowedHosts (orrery dashboard: --allowed-host ${url.host}).`,
  };
}

/**
 * Refuses (403) an action whose `Origin` names neither the host it was sent to nor one of
 * `allowed`: a page of another site, or an opaque origin ("null"). No `Origin` (not a
 * browser) lets it through, as does `undefined`.
 */
export function checkOrigin(
  origin: string | undefined,
  url: URL,
  allowed: readonly AllowedHost[] | undefined,
): HttpError | undefined {
  if (origin === undefined) return undefined;
  let from: URL | undefined;
  try {
    from = origin === 'null' ? undefined : new URL(origin);
  } catch {
    from = undefined;
  }
  if (from !== undefined) {
    // Compared by name and port, not scheme: a proxy may end TLS before the dashboard.
    if (from.hostname === url.hostname && from.port === url.port) return undefined;
    if (allowed !== undefined && isAllowed(allowed, from.hostname, from.port)) return undefined;
  }
  const shown = from?.host ?? origin;
  return {
    status: 403,
    code: 'ORIGIN_NOT_ALLOWED',
    message: `Refused an action from the origin "${origin}", which is not this dashboard's (${url.host}). If the dashboard is reached under that name, add "${shown}" to allowedHosts (orrery dashboard: --allowed-host ${shown}).`,
  };
}
