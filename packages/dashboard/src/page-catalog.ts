import { RUNNER_FORGOTTEN_AFTER_MS, type WorkflowInfo } from '@orreryjs/runner';
import { renderDag } from './dag.js';
import { loadWorkflowGroups } from './data.js';
import { flowControlTerms, groupsTable } from './flow-control-view.js';
import { formatInstant } from './format.js';
import { html, type SafeHtml } from './html.js';
import { badge, layout, link, type PageContext } from './layout.js';

/**
 * The Workflows page: every stored definition drawn as a graph, with its priority and
 * concurrency rules; the newest version of a workflow also shows its groups' occupancy.
 */
export async function renderWorkflows(ctx: PageContext): Promise<SafeHtml> {
  const workflows = await ctx.client.listWorkflows();
  const groups = await loadWorkflowGroups(ctx.client, workflows);
  // Listed by name, oldest registration first: the last of a name is its newest version.
  const isNewest = (w: WorkflowInfo, i: number) => workflows[i + 1]?.name !== w.name;
  const body = html`<h1>Workflows</h1>
${workflows.length === 0 ? html`<p class="panel muted">No workflows registered yet.</p>` : ''}
${workflows.map((w, i) => {
  const occupancy = isNewest(w, i) ? groups.get(w.name) : undefined;
  return html`<section class="panel" data-workflow="${w.name}"><h2 style="margin-top:0">${w.name} <span class="mono small muted">${w.version}</span></h2>
${w.description ? html`<p>${w.description}</p>` : ''}
<p class="small muted">Last seen ${formatInstant(w.lastSeenAt)} UTC · <a href="${link(ctx, `executions?workflow=${encodeURIComponent(w.name)}`)}">executions →</a></p>
<dl class="kv small">${flowControlTerms(w)}</dl>
${occupancy === undefined ? '' : html`<h3 class="small">Concurrency groups</h3>${groupsTable(occupancy)}`}
${renderDag(
  w.tasks.map((t) => ({ id: t.id, dependsOn: t.dependsOn, detail: t.trigger })),
  `Task graph of ${w.name}`,
)}</section>`;
})}`;
  return layout(ctx, 'workflows', 'Workflows', body);
}

/**
 * The Runners page: heartbeats and registered workflows. Runners last heard from (a heartbeat, or
 * a shutdown) more than a day ago are left out unless the URL asks for `?all=1`: a fleet restarted
 * by `kill -9` would otherwise fill the page with dead processes until retention deletes them.
 */
export async function renderRunners(ctx: PageContext): Promise<SafeHtml> {
  const recorded = await ctx.client.listRunners({ includeStopped: true });
  const showAll = ctx.url.searchParams.get('all') === '1';
  const lastHeardBeforeMs = ctx.now.getTime() - RUNNER_FORGOTTEN_AFTER_MS;
  const runners = showAll
    ? recorded
    : recorded.filter((r) => (r.stoppedAt ?? r.heartbeatAt).getTime() >= lastHeardBeforeMs);
  const hidden = recorded.length - runners.length;
  const rows = runners.map(
    (
      r,
    ) => html`<tr><td data-label="Runner"><div class="mono small">${r.id}</div></td><td data-label="Host"><div>${r.hostname} <span class="muted">pid ${r.pid}</span></div></td>
<td data-label="State"><div>${badge(r.alive ? 'ok' : 'stopped', r.alive ? 'alive' : r.stoppedAt ? 'stopped' : 'silent')}</div></td>
<td data-label="Heartbeat"><div class="mono small">${formatInstant(r.heartbeatAt)} UTC</div></td><td data-label="Started"><div class="mono small">${formatInstant(r.startedAt)} UTC</div></td>
<td data-label="Workflows"><div>${r.workflows.join(', ')}</div></td></tr>`,
  );
  const older =
    hidden === 0
      ? ''
      : html`<p class="small muted">${hidden} runner${hidden === 1 ? '' : 's'} last heard from more than a day ago ${hidden === 1 ? 'is' : 'are'} hidden · <a href="${link(ctx, 'runners?all=1')}">show all</a></p>`;
  const body = html`<h1>Runners</h1>${
    runners.length === 0
      ? html`<p class="panel muted">${recorded.length === 0 ? 'No runner has registered yet.' : 'No runner was heard from in the last day.'}</p>`
      : html`<table class="cards"><thead><tr><th>Runner</th><th>Host</th><th>State</th><th>Heartbeat</th><th>Started</th><th>Workflows</th></tr></thead><tbody>${rows}</tbody></table>`
  }${older}`;
  return layout(ctx, 'runners', 'Runners', body);
}
