import { renderDag } from './dag.js';
import { formatInstant } from './format.js';
import { html, type SafeHtml } from './html.js';
import { badge, layout, link, type PageContext } from './layout.js';

/** The Workflows page: every stored definition drawn as a graph. */
export async function renderWorkflows(ctx: PageContext): Promise<SafeHtml> {
  const workflows = await ctx.client.listWorkflows();
  const body = html`<h1>Workflows</h1>
${workflows.length === 0 ? html`<p class="panel muted">No workflows registered yet.</p>` : ''}
${workflows.map(
  (
    w,
  ) => html`<section class="panel" data-workflow="${w.name}"><h2 style="margin-top:0">${w.name} <span class="mono small muted">${w.version}</span></h2>
${w.description ? html`<p>${w.description}</p>` : ''}
<p class="small muted">Last seen ${formatInstant(w.lastSeenAt)} UTC · <a href="${link(ctx, `executions?workflow=${encodeURIComponent(w.name)}`)}">executions →</a></p>
${renderDag(
  w.tasks.map((t) => ({ id: t.id, dependsOn: t.dependsOn, detail: t.trigger })),
  `Task graph of ${w.name}`,
)}</section>`,
)}`;
  return layout(ctx, 'workflows', 'Workflows', body);
}

/** The Runners page: heartbeats and registered workflows. */
export async function renderRunners(ctx: PageContext): Promise<SafeHtml> {
  const runners = await ctx.client.listRunners({ includeStopped: true });
  const rows = runners.map(
    (
      r,
    ) => html`<tr><td data-label="Runner"><div class="mono small">${r.id}</div></td><td data-label="Host"><div>${r.hostname} <span class="muted">pid ${r.pid}</span></div></td>
<td data-label="State"><div>${badge(r.alive ? 'ok' : 'stopped', r.alive ? 'alive' : r.stoppedAt ? 'stopped' : 'silent')}</div></td>
<td data-label="Heartbeat"><div class="mono small">${formatInstant(r.heartbeatAt)} UTC</div></td><td data-label="Started"><div class="mono small">${formatInstant(r.startedAt)} UTC</div></td>
<td data-label="Workflows"><div>${r.workflows.join(', ')}</div></td></tr>`,
  );
  const body = html`<h1>Runners</h1>${
    runners.length === 0
      ? html`<p class="panel muted">No runner has registered yet.</p>`
      : html`<table class="cards"><thead><tr><th>Runner</th><th>Host</th><th>State</th><th>Heartbeat</th><th>Started</th><th>Workflows</th></tr></thead><tbody>${rows}</tbody></table>`
  }`;
  return layout(ctx, 'runners', 'Runners', body);
}
