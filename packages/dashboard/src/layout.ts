import type { DashboardClient } from './client.js';
import type { Page } from './data.js';
import { html, type SafeHtml } from './html.js';

/** What every page renderer needs. */
export interface PageContext {
  client: DashboardClient;
  /** The mount path, always ending with `/`. */
  base: string;
  csrfToken: string;
  readOnly: boolean;
  now: Date;
  url: URL;
}

/** A link under the mount path: `link(ctx, 'schedules')` → `/ops/schedules`. */
export function link(ctx: PageContext, path: string): string {
  return ctx.base + path.replace(/^\//, '');
}

/** A status pill, coloured by status. */
export function badge(status: string, text = status.replace(/_/g, ' ')): SafeHtml {
  return html`<span class="badge st-${status}">${text}</span>`;
}

/**
 * An action button in its own form, posted by app.js with the CSRF header. The button's text
 * is the action's name, which is its accessible name. Nothing is drawn in read-only mode.
 */
export function actionForm(
  ctx: PageContext,
  options: {
    action: string;
    label: string;
    method?: 'POST' | 'PATCH' | 'DELETE';
    fields?: SafeHtml;
    danger?: boolean;
    confirm?: string;
    /** Another class beside `act`, for a form laid out differently. */
    className?: string;
  },
): SafeHtml {
  if (ctx.readOnly) return html``;
  const classes = options.className === undefined ? 'act' : `act ${options.className}`;
  return html`<form class="${classes}" action="${link(ctx, options.action)}" data-method="${options.method ?? 'POST'}"${
    options.confirm === undefined ? '' : html` data-confirm="${options.confirm}"`
  }>${options.fields ?? ''}<button type="submit"${options.danger ? html` class="danger"` : ''}>${options.label}</button></form>`;
}

/** Previous/next links of a paginated list, keeping the other query parameters. */
export function pager(ctx: PageContext, list: Page<unknown>): SafeHtml {
  const pageNo = Math.floor(list.offset / list.limit) + 1;
  const to = (n: number) => {
    const params = new URLSearchParams(ctx.url.search);
    params.set('page', String(n));
    return `?${params.toString()}`;
  };
  if (pageNo === 1 && !list.hasMore) return html``;
  return html`<nav class="pager" aria-label="Pagination">
${pageNo > 1 ? html`<a href="${to(pageNo - 1)}" rel="prev">← Previous</a>` : ''}
<span class="muted">Page ${pageNo}</span>
${list.hasMore ? html`<a href="${to(pageNo + 1)}" rel="next">Next →</a>` : ''}</nav>`;
}

const NAV: { path: string; label: string }[] = [
  { path: '', label: 'Overview' },
  { path: 'schedules', label: 'Schedules' },
  { path: 'executions', label: 'Executions' },
  { path: 'workflows', label: 'Workflows' },
  { path: 'runners', label: 'Runners' },
];

/** The page shell: head (own CSS and JS only), navigation, flash area and the page body in `<main>`. */
export function layout(ctx: PageContext, section: string, title: string, body: SafeHtml): SafeHtml {
  const nav = NAV.map(
    (n) => html`<a href="${link(ctx, n.path)}"${n.path === section ? html` aria-current="page"` : ''}>${n.label}</a>`,
  );
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title} · Orrery</title>
<meta name="orrery-csrf" content="${ctx.csrfToken}"><meta name="orrery-base" content="${ctx.base}">
<link rel="icon" type="image/svg+xml" href="${link(ctx, 'assets/icon.svg')}">
<link rel="stylesheet" href="${link(ctx, 'assets/app.css')}"><script src="${link(ctx, 'assets/app.js')}" defer></script>
</head><body>
<header class="top"><a class="brand" href="${link(ctx, '')}">Orrery</a><nav aria-label="Sections">${nav}</nav>
<span class="live" id="live" aria-live="polite">${ctx.readOnly ? 'Read-only · ' : ''}Connecting…</span></header>
<main><div id="flash"></div>
${body}</main></body></html>`;
}
