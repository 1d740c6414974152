import type { SignalWait } from '@orreryjs/core';
import type { PipelineResult, TaskAttempt, TaskResult, WorkflowTaskInfo } from '@orreryjs/runner';
import { type DagNode, renderDag } from './dag.js';
import { type ExecutionFilter, loadExecutionDetail, loadExecutions } from './data.js';
import { waitingNote, waitingText } from './flow-control-view.js';
import { formatDuration, formatInstant } from './format.js';
import { html, type SafeHtml } from './html.js';
import { type PageWindow, PIPELINE_STATUSES } from './input.js';
import { actionForm, badge, layout, link, type PageContext, pager } from './layout.js';
import { signalWaitPanel, signalWaits } from './signal-view.js';

type MapCounts = NonNullable<TaskResult['instances']>;

/** The Executions page: filters by status, workflow and schedule, newest first. */
export async function renderExecutions(
  ctx: PageContext,
  filter: ExecutionFilter,
  window: PageWindow,
): Promise<SafeHtml> {
  const list = await loadExecutions(ctx.client, filter, window);
  const rows = list.items.map(
    (e) => html`<tr>
<td data-label="Execution"><div><a class="mono" href="${link(ctx, `executions/${e.executionId}`)}">${e.executionId.slice(0, 8)}</a></div></td>
<td data-label="Workflow"><div>${e.workflowName}</div></td>
<td data-label="Status"><div>${badge(e.status)}${waitingNote(e)}</div></td>
<td data-label="Created"><div class="mono small">${formatInstant(e.createdAt)} UTC</div></td>
<td data-label="Duration"><div>${formatDuration(e.durationMs)}</div></td>
<td data-label="Schedule"><div class="mono small">${
      e.scheduleId === null || e.scheduledTime === null
        ? ''
        : html`<a href="${link(ctx, `schedules/${encodeURIComponent(e.scheduleId)}`)}" title="The schedule's slot">${formatInstant(e.scheduledTime)} UTC</a>`
    }</div></td>
<td data-label="Error"><div class="small">${e.error?.split('\n')[0] ?? ''}</div></td></tr>`,
  );
  const body = html`<h1>Executions</h1>
<form class="filters" method="get" action="${link(ctx, 'executions')}">
<label>Status <select name="status"><option value="">any</option>${PIPELINE_STATUSES.map(
    (s) => html`<option${filter.status === s ? html` selected` : ''}>${s}</option>`,
  )}</select></label>
<label>Workflow <input name="workflow" value="${filter.workflowName ?? ''}" size="14"></label>
<label>Schedule <input name="schedule" value="${filter.schedule ?? ''}" size="14" placeholder="name or id"></label>
<button type="submit" class="primary">Filter</button></form>
${
  list.items.length === 0
    ? html`<p class="panel muted">No executions match.</p>`
    : html`<table class="cards"><thead><tr><th>Execution</th><th>Workflow</th><th>Status</th><th>Created</th><th>Duration</th><th>Schedule slot</th><th>Error</th></tr></thead><tbody>${rows}</tbody></table>`
}
${pager(ctx, list)}`;
  return layout(ctx, 'executions', 'Executions', body);
}

/** The stored definition of the execution's workflow (for the DAG's edges); null when it is gone. */
async function definitionOf(ctx: PageContext, result: PipelineResult): Promise<WorkflowTaskInfo[] | null> {
  const workflows = await ctx.client.listWorkflows();
  const match =
    workflows.find((w) => w.name === result.workflowName && w.version === result.workflowVersion) ??
    workflows.find((w) => w.name === result.workflowName);
  return match?.tasks ?? null;
}

/** A map task's instance counts, short enough for its node: `150/200 items · 3 running`. */
function instancesLabel(counts: MapCounts): string {
  const running = counts.running === 0 ? '' : ` · ${counts.running} running`;
  const failed = counts.failed === 0 ? '' : ` · ${counts.failed} failed`;
  return `${counts.completed}/${counts.total} items${running}${failed}`;
}

function taskDetail(task: TaskResult, wait: SignalWait | undefined): string {
  if (task.status === 'skipped') return 'skipped';
  if (wait !== undefined) return `waits for ${wait.signal}`;
  // A map task is drawn once, whatever its number of items: its node counts them.
  if (task.instances !== undefined) return instancesLabel(task.instances);
  const attempts = `${task.attempts} attempt${task.attempts === 1 ? '' : 's'}`;
  return task.durationMs === undefined ? attempts : `${attempts} · ${formatDuration(task.durationMs)}`;
}

/** A task's error: the message, then its stack frames (DESIGN.md: one per line after the message). */
function taskError(error: string, open: boolean): SafeHtml {
  const [message = '', ...frames] = error.split('\n');
  return html`<h4 class="small">Error</h4><p class="error-msg">${message}</p>${
    frames.length === 0
      ? ''
      : html`<details class="stack"${open ? html` open` : ''}><summary class="small">Stack trace (${frames.length} line${frames.length === 1 ? '' : 's'})</summary><pre class="error">${frames.join('\n')}</pre></details>`
  }`;
}

/**
 * Why a task did not run: a skip is the workflow working as written (`when` returned false,
 * a trigger rule not met), not a failure, so it is told as a plain note, not as an error.
 */
function skipReason(task: TaskResult): SafeHtml {
  return html`<p class="small muted skip-reason">Skipped${task.error ? html`: ${task.error}` : ''}.</p>`;
}

/** A completed task's own context delta: the keys it set, and those it deleted. */
function taskOutput(output: NonNullable<TaskResult['output']>): SafeHtml {
  const set = Object.keys(output.set).length === 0 ? '' : html`<pre>${JSON.stringify(output.set, null, 2)}</pre>`;
  const deleted =
    output.deleted.length === 0
      ? ''
      : html`<p class="small muted">Deleted: ${output.deleted.map((k, i) => html`${i > 0 ? ', ' : ''}<code>${k}</code>`)}</p>`;
  return html`<h4 class="small">Output</h4>${set === '' && deleted === '' ? html`<p class="small muted">No context changes.</p>` : html`${set}${deleted}`}`;
}

/** Each attempt of a task that took more than one: its outcome, the runner that ran it, its times and error (first line). */
function taskAttempts(history: readonly TaskAttempt[]): SafeHtml {
  const rows = history.map(
    (a) => html`<tr data-attempt="${a.attempt}"><td data-label="Attempt">${a.attempt}</td>
<td data-label="Outcome">${a.outcome.replace('_', ' ')}</td>
<td data-label="Runner"><div class="mono">${a.runnerId ?? '—'}</div></td>
<td data-label="Started"><div class="mono">${formatInstant(a.startedAt)}</div></td>
<td data-label="Ended"><div class="mono">${formatInstant(a.endedAt)}</div></td>
<td data-label="Error"><div class="small">${a.error?.split('\n')[0] ?? ''}</div></td></tr>`,
  );
  return html`<h4 class="small">Attempts</h4><table class="cards small attempts"><thead><tr><th>#</th><th>Outcome</th><th>Runner</th><th>Started</th><th>Ended</th><th>Error</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** A map task's items by status, and where the JSON API lists each of them. */
function taskItems(ctx: PageContext, executionId: string, taskId: string, counts: MapCounts): SafeHtml {
  const path = `api/executions/${encodeURIComponent(executionId)}/tasks/${encodeURIComponent(taskId)}/instances`;
  return html`<dt>Items</dt><dd data-instances>${counts.total}: ${counts.completed} completed, ${counts.running} running, ${counts.failed} failed · <a href="${link(ctx, path)}">each item (JSON)</a></dd>`;
}

function taskSection(ctx: PageContext, executionId: string, task: TaskResult, wait: SignalWait | undefined): SafeHtml {
  return html`<section class="panel task st-${task.status}" id="task-${task.taskId}" data-task="${task.taskId}">
<h3><span class="mono">${task.taskId}</span> ${badge(task.status)}</h3>
${wait === undefined ? '' : signalWaitPanel(ctx, executionId, wait)}
<dl class="kv small"><dt>Attempts</dt><dd>${task.attempts}</dd><dt>Started</dt><dd class="mono">${formatInstant(task.startedAt)}</dd>
<dt>Finished</dt><dd class="mono">${formatInstant(task.completedAt)}</dd><dt>Duration</dt><dd>${formatDuration(task.durationMs)}</dd>
${task.instances === undefined ? '' : taskItems(ctx, executionId, task.taskId, task.instances)}</dl>
${task.attemptHistory.length > 1 ? taskAttempts(task.attemptHistory) : ''}
${task.status === 'skipped' ? skipReason(task) : task.error ? taskError(task.error, task.status === 'failed') : ''}
${task.output === undefined ? '' : taskOutput(task.output)}
</section>`;
}

/**
 * The schedule that started the execution, from the context keys every scheduled pipeline
 * gets (`schedule_id`, `schedule_name`, `scheduled_time`; DESIGN.md "Cron").
 */
function scheduleRow(ctx: PageContext, result: PipelineResult): SafeHtml {
  const { schedule_id: id, schedule_name: name, scheduled_time: slot } = result.finalContext;
  if (typeof id !== 'string') return html``;
  const label = typeof name === 'string' ? name : id;
  return html`<dt>Schedule</dt><dd><a href="${link(ctx, `schedules/${encodeURIComponent(id)}`)}" data-schedule-link>${label}</a>${
    typeof slot === 'string'
      ? html` <span class="muted small">slot <span class="mono">${formatInstant(new Date(slot))} UTC</span></span>`
      : ''
  }</dd>`;
}

function executionActions(ctx: PageContext, result: PipelineResult): SafeHtml {
  const path = `api/executions/${result.executionId}`;
  const s = result.status;
  const live = s === 'pending' || s === 'running' || s === 'paused';
  return html`<div class="actions">${live ? actionForm(ctx, { action: `${path}/cancel`, label: 'Cancel', danger: true, confirm: 'Cancel this execution?' }) : ''}${
    s === 'pending' || s === 'running'
      ? actionForm(ctx, {
          action: `${path}/pause`,
          label: 'Pause',
          fields: html`<input name="reason" placeholder="Reason (optional)" aria-label="Pause reason" size="16">`,
        })
      : ''
  }${s === 'paused' ? actionForm(ctx, { action: `${path}/resume`, label: 'Resume' }) : ''}${
    s === 'failed' || s === 'cancelled' ? actionForm(ctx, { action: `${path}/retry`, label: 'Retry' }) : ''
  }</div>`;
}

/** The execution detail page: the task DAG as a graph, each task's attempts, error and output, the final context. */
export async function renderExecutionDetail(ctx: PageContext, id: string): Promise<SafeHtml> {
  const result = await loadExecutionDetail(ctx.client, id);
  const waiting = waitingText(result);
  const definition = await definitionOf(ctx, result);
  const deps = new Map((definition ?? []).map((t) => [t.id, t.dependsOn]));
  const waits = signalWaits(result.tasks, definition);
  const nodes: DagNode[] = result.tasks.map((task) => ({
    id: task.taskId,
    dependsOn: deps.get(task.taskId) ?? [],
    status: task.status,
    detail: taskDetail(task, waits.get(task.taskId)),
    href: `#task-${task.taskId}`,
  }));
  const failed = result.tasks.filter((t) => t.status === 'failed').map((t) => t.taskId);
  const body = html`<p class="small"><a href="${link(ctx, 'executions')}">← Executions</a></p>
<h1>${result.workflowName} ${badge(result.status)}</h1>
<div class="panel"><dl class="kv">
<dt>Execution</dt><dd class="mono small">${result.executionId}</dd>
<dt>Version</dt><dd class="mono small">${result.workflowVersion}</dd>
<dt>Created</dt><dd class="mono">${formatInstant(result.createdAt)} UTC</dd>
<dt>Priority</dt><dd data-priority>${result.priority}</dd>
${waiting === null ? '' : html`<dt>Waiting</dt><dd data-waiting>${waiting}</dd>`}
<dt>Duration</dt><dd>${formatDuration(result.durationMs)}</dd>
${scheduleRow(ctx, result)}
${result.error ? html`<dt>Error</dt><dd class="error-msg">${result.error.split('\n')[0]}</dd>` : ''}
${failed.length > 0 ? html`<dt>Failed tasks</dt><dd>${failed.map((t, i) => html`${i > 0 ? ', ' : ''}<a href="#task-${t}" class="mono">${t}</a>`)}</dd>` : ''}
</dl>${executionActions(ctx, result)}</div>
<h2>Tasks</h2>
${renderDag(nodes, `Task graph of ${result.workflowName}`)}
${definition === null ? html`<p class="small muted">The workflow's definition is not stored: dependencies are not drawn.</p>` : ''}
${result.tasks.map((task) => taskSection(ctx, result.executionId, task, waits.get(task.taskId)))}
<h2>Final context</h2><pre>${JSON.stringify(result.finalContext, null, 2)}</pre>`;
  return layout(ctx, 'executions', `${result.workflowName} ${result.executionId.slice(0, 8)}`, body);
}
