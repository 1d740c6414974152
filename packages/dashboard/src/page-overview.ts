import { loadOverview } from './data.js';
import { formatDuration } from './format.js';
import { html, type SafeHtml } from './html.js';
import { badge, layout, link, type PageContext } from './layout.js';

function stat(value: SafeHtml | string | number, label: string, href?: string): SafeHtml {
  const inner = html`<div class="v">${value}</div><div class="k">${label}</div>`;
  return href === undefined
    ? html`<div class="stat">${inner}</div>`
    : html`<a class="stat" href="${href}">${inner}</a>`;
}

/** The Overview page: health, runners, executions by status, cron lag, lost and abandoned work, orphaned schedules. */
export async function renderOverview(ctx: PageContext): Promise<SafeHtml> {
  const o = await loadOverview(ctx.client);
  const alive = o.runners.filter((r) => r.alive).length;
  const body = html`<h1>Overview</h1>
<div class="grid">
${stat(badge(o.health.status), `health${o.health.reasons?.length ? `: ${o.health.reasons.join('; ')}` : ''}`)}
${stat(alive, 'runners alive', link(ctx, 'runners'))}
</div>
<h2>Cron, last 24 hours</h2>
<div class="grid">
${stat(formatDuration(o.cron.meanDelayMs), 'mean fire lag')}
${stat(formatDuration(o.cron.p99DelayMs), 'p99 fire lag')}
${stat(o.cron.lostExecutions, 'lost')}
${stat(o.cron.abandonedExecutions, 'abandoned')}
${stat(o.cron.missedExecutions, 'missed')}
${stat(o.cron.successRate === null ? '—' : `${o.cron.successRate.toFixed(1)} %`, 'hand-off success')}
</div>
<h2>Executions by status</h2>
<div class="grid">${Object.entries(o.executionsByStatus).map(([status, c]) =>
    stat(`${c.count}${c.capped ? '+' : ''}`, status, link(ctx, `executions?status=${status}`)),
  )}</div>
<h2>Schedules no live runner can run</h2>${
    o.orphanSchedules.length === 0
      ? html`<p class="panel muted">Every enabled schedule has a live runner with its workflow.</p>`
      : // A fleet condition, shown as a warning: it never makes a runner unhealthy (DESIGN.md, Observability).
        html`<div class="panel note-panel" data-fleet-warning><p>Warning: nothing will fire these until a runner that registers their workflow starts. The runners themselves stay healthy.</p><ul>${o.orphanSchedules.map(
          (s) =>
            html`<li><a href="${link(ctx, `schedules/${s.id}`)}">${s.name ?? s.id}</a> <span class="muted">needs ${s.workflowName}</span></li>`,
        )}</ul></div>`
  }`;
  return layout(ctx, '', 'Overview', body);
}
