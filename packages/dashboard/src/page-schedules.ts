import { SCHEDULE_DEFAULTS } from '@orreryjs/cron';
import {
  type LedgerRow,
  type LedgerStats,
  loadScheduleDetail,
  loadSchedules,
  type ScheduleView,
  STATS_WINDOW,
  workflowNames,
} from './data.js';
import { formatDuration, formatInstant, formatRun } from './format.js';
import { html, type SafeHtml } from './html.js';
import type { PageWindow } from './input.js';
import { actionForm, badge, layout, link, type PageContext, pager } from './layout.js';
import { addScheduleForm, editScheduleForm } from './schedule-form.js';

function scheduleName(view: ScheduleView): string {
  return view.schedule.name ?? view.schedule.id;
}

function schedulePath(view: ScheduleView): string {
  return `schedules/${encodeURIComponent(view.schedule.id)}`;
}

/** Pause (with a note) or Resume, and Trigger now. */
function primaryActions(ctx: PageContext, view: ScheduleView): SafeHtml {
  const path = `api/${schedulePath(view)}`;
  const toggle = view.schedule.enabled
    ? actionForm(ctx, {
        action: `${path}/pause`,
        label: 'Pause',
        fields: html`<input name="note" placeholder="Note (optional)" aria-label="Pause note for ${scheduleName(view)}" size="14">`,
      })
    : actionForm(ctx, { action: `${path}/resume`, label: 'Resume' });
  // Trigger now follows the overlap policy (a skip schedule with an active run refuses it);
  // Force trigger starts one whatever the policy.
  const force = actionForm(ctx, {
    action: `${path}/trigger`,
    label: 'Force trigger',
    fields: html`<input type="hidden" name="overlapPolicy" value="allow">`,
    confirm: `Start a run of ${scheduleName(view)} now, even while another is active?`,
  });
  return html`${toggle}${actionForm(ctx, { action: `${path}/trigger`, label: 'Trigger now' })}${view.schedule.overlapPolicy === 'allow' ? '' : force}`;
}

/** Backfill a range, and Delete. */
function moreActions(ctx: PageContext, view: ScheduleView): SafeHtml {
  const path = `api/${schedulePath(view)}`;
  return html`${actionForm(ctx, {
    action: `${path}/backfill`,
    label: 'Backfill',
    fields: html`<label class="small muted">From (UTC) <input type="datetime-local" step="1" name="start" required></label>
<label class="small muted">To (UTC) <input type="datetime-local" step="1" name="end" required></label>`,
  })}${actionForm(ctx, {
    action: path,
    method: 'DELETE',
    label: 'Delete',
    danger: true,
    confirm: `Delete schedule ${scheduleName(view)}? Its ledger is kept.`,
  })}`;
}

/** An execution id named in a note: "paused after failure of execution <id>", "see execution <id>". */
const NOTED_EXECUTION = /(\bexecution\s+)([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/gi;

/**
 * A schedule's note as text, with each execution it names linked to that execution's page:
 * the note a failure pause writes leads straight to the pipeline that failed.
 */
function noteText(ctx: PageContext, note: string): SafeHtml {
  const parts: SafeHtml[] = [];
  let from = 0;
  for (const match of note.matchAll(NOTED_EXECUTION)) {
    const [whole, lead = '', id = ''] = match;
    parts.push(
      html`${note.slice(from, match.index)}${lead}<a href="${link(ctx, `executions/${id}`)}" class="mono">${id}</a>`,
    );
    from = match.index + whole.length;
  }
  return html`${parts}${note.slice(from)}`;
}

function stateCell(ctx: PageContext, view: ScheduleView): SafeHtml {
  const { schedule } = view;
  return html`${schedule.enabled ? badge('enabled') : badge('paused')}${
    schedule.note ? html`<div class="small muted note">${noteText(ctx, schedule.note)}</div>` : ''
  }`;
}

/** `12 scheduled runs`, or `12 of 100 scheduled runs` with maxRuns (triggers and backfills do not count). */
function runsText(schedule: ScheduleView['schedule']): string {
  return schedule.maxRuns === null
    ? `${schedule.runCount} scheduled run${schedule.runCount === 1 ? '' : 's'}`
    : `${schedule.runCount} of ${schedule.maxRuns} scheduled runs`;
}

/**
 * What the schedule does with missed and overlapping runs, after a failure and around DST;
 * `changedOnly` leaves out the policies at their defaults (the list, where they would repeat).
 */
function policiesText(schedule: ScheduleView['schedule'], changedOnly = false): string {
  const parts: string[] = [];
  if (!changedOnly || schedule.catchupPolicy !== SCHEDULE_DEFAULTS.catchupPolicy) {
    parts.push(`catch-up ${schedule.catchupPolicy.replace('_', ' ')}`);
  }
  if (!changedOnly || schedule.overlapPolicy !== SCHEDULE_DEFAULTS.overlapPolicy) {
    parts.push(`overlap ${schedule.overlapPolicy.replace('_', ' ')}`);
  }
  if (schedule.pauseOnFailure) parts.push('pauses on failure');
  if (schedule.jitterMs > 0) parts.push(`jitter ${formatDuration(schedule.jitterMs)}`);
  if (schedule.dst !== null) parts.push(`DST: repeated ${schedule.dst.repeated}, gap ${schedule.dst.gap}`);
  return parts.join(' · ');
}

function nextRunsList(view: ScheduleView): SafeHtml {
  if (view.nextRuns.length === 0) return html`<span class="muted">${view.schedule.enabled ? 'none' : 'paused'}</span>`;
  const zone = view.schedule.timezone;
  return html`<ol class="runs small">${view.nextRuns.map((at) => {
    const run = formatRun(at, zone);
    return html`<li><span class="mono">${run.local}</span>${zone === 'UTC' ? ' UTC' : html` <span class="muted mono">· ${run.utc}</span>`}</li>`;
  })}</ol>`;
}

function lastRunCell(ctx: PageContext, view: ScheduleView): SafeHtml {
  const last = view.lastOccurrence;
  if (last === null) return html`<span class="muted">never</span>`;
  const outcome = slotOutcome(last);
  const target = last.pipelineExecutionId === null ? null : link(ctx, `executions/${last.pipelineExecutionId}`);
  return html`<span class="mono small">${formatInstant(last.scheduledTime)} UTC</span><br>${
    target === null ? badge(outcome) : html`<a href="${target}">${badge(outcome)}</a>`
  }`;
}

function expressionCell(view: ScheduleView): SafeHtml {
  return html`${view.description ?? ''}<div class="mono small muted">${view.schedule.cronExpression}</div>`;
}

/** The Schedules page: the Add form, then one page of schedules with words, next runs, last outcome and actions. */
export async function renderSchedules(ctx: PageContext, window: PageWindow): Promise<SafeHtml> {
  const [list, workflows] = await Promise.all([
    loadSchedules(ctx.client, window, ctx.now),
    ctx.readOnly ? [] : workflowNames(ctx.client),
  ]);
  const rows = list.items.map(
    (view) => html`<tr data-schedule="${scheduleName(view)}">
<td data-label="Name"><div><a class="name" href="${link(ctx, schedulePath(view))}">${scheduleName(view)}</a><div class="small muted">${view.schedule.workflowName}</div></div></td>
<td data-label="Schedule"><div>${expressionCell(view)}<div class="small muted">${view.schedule.timezone}</div><div class="small muted policies">${policiesText(view.schedule, true)}</div></div></td>
<td data-label="Next runs" class="wide"><div>${nextRunsList(view)}</div></td>
<td data-label="Last run"><div>${lastRunCell(ctx, view)}</div></td>
<td data-label="State"><div>${stateCell(ctx, view)}<div class="small muted runs">${runsText(view.schedule)}</div></div></td>
<td data-label="Actions" class="${ctx.readOnly ? '' : 'wide'}"><div><div class="actions">${primaryActions(ctx, view)}</div>${
      ctx.readOnly
        ? ''
        : html`<details class="more" id="more-${view.schedule.id}"><summary>Backfill or delete</summary>${moreActions(ctx, view)}</details>`
    }</div></td></tr>`,
  );
  const body = html`<h1>Schedules</h1>
${ctx.readOnly ? '' : html`<details class="more form-panel" id="add-schedule"><summary>Add a schedule</summary>${addScheduleForm(ctx, workflows)}</details>`}
${
  list.items.length === 0
    ? html`<p class="panel muted">No schedules${list.offset > 0 ? ' on this page' : ' yet: add one here, with runner.addCronSchedule() or with the orrery CLI'}.</p>`
    : html`<table class="cards"><thead><tr><th>Name</th><th>Schedule</th><th>Next runs (zone · UTC)</th><th>Last run</th><th>State</th><th>Actions</th></tr></thead><tbody>${rows}</tbody></table>`
}
${pager(ctx, list)}`;
  return layout(ctx, 'schedules', 'Schedules', body);
}

/**
 * What a slot came to: for a slot handed off, its pipeline's status (a pipeline that failed
 * shows red, not a green "handed off"); else the ledger status. A pipeline deleted since
 * leaves the ledger status.
 */
function slotOutcome(row: LedgerRow): string {
  return row.status === 'handed_off' && row.pipelineStatus !== null ? row.pipelineStatus : row.status;
}

function ledgerEntry(ctx: PageContext, row: LedgerRow, timezone: string): SafeHtml {
  const outcome = slotOutcome(row);
  const label =
    row.status === 'missed'
      ? `missed ×${row.missedCount}`
      : outcome === row.status
        ? row.status.replace('_', ' ')
        : outcome;
  const onCadence = row.source === 'schedule' || row.source === 'catchup';
  const lag = row.handedOffAt === null || !onCadence ? null : row.handedOffAt.getTime() - row.scheduledTime.getTime();
  const local =
    timezone === 'UTC'
      ? ''
      : html` <span class="muted mono small">${formatRun(row.scheduledTime, timezone).local} ${timezone}</span>`;
  return html`<li class="t-${outcome}" data-status="${row.status}" data-outcome="${outcome}"><span class="when mono">${formatInstant(row.scheduledTime)} UTC</span>${local}
${badge(outcome, label)}${row.recovered ? html` ${badge('recovered')}` : ''}${row.source === 'schedule' ? '' : html` <span class="badge">${row.source}</span>`}
<div class="meta">${row.status === 'buffered' ? html`<span>waits for the active run to end</span>` : ''}${row.abandonReason ? html`<span>${row.abandonReason}</span>` : ''}${lag === null ? (row.handedOffAt === null ? '' : html`<span>handed off ${formatInstant(row.handedOffAt)} UTC</span>`) : html`<span>lag ${formatDuration(lag)}</span>`}${row.recoveryAttempts > 0 ? html`<span>recovery attempts ${row.recoveryAttempts}</span>` : ''}${
    row.pipelineExecutionId === null
      ? ''
      : html`<a href="${link(ctx, `executions/${row.pipelineExecutionId}`)}">pipeline ${row.pipelineExecutionId.slice(0, 8)}</a>`
  }</div></li>`;
}

function statsPanel(stats: LedgerStats): SafeHtml {
  const entries = Object.entries(stats.byStatus).sort(([a], [b]) => a.localeCompare(b));
  return html`<div class="grid">
<div class="stat"><div class="v">${stats.rows}</div><div class="k">ledger rows (latest ${STATS_WINDOW})</div></div>
${entries.map(([status, n]) => html`<div class="stat"><div class="v">${n}</div><div class="k">${status.replace('_', ' ')} slots</div></div>`)}
<div class="stat"><div class="v">${formatDuration(stats.meanLagMs)}</div><div class="k">mean fire lag</div></div>
<div class="stat"><div class="v">${formatDuration(stats.p99LagMs)}</div><div class="k">p99 fire lag</div></div>
</div>`;
}

/** The schedule detail page: definition, next runs, actions, stats and the ledger as a timeline. */
export async function renderScheduleDetail(ctx: PageContext, idOrName: string, window: PageWindow): Promise<SafeHtml> {
  const [{ view, stats, ledger }, workflows] = await Promise.all([
    loadScheduleDetail(ctx.client, idOrName, window, ctx.now),
    ctx.readOnly ? [] : workflowNames(ctx.client),
  ]);
  const s = view.schedule;
  const body = html`<p class="small"><a href="${link(ctx, 'schedules')}">← Schedules</a></p>
<h1>${scheduleName(view)} ${s.enabled ? badge('enabled') : badge('paused')}</h1>
${s.note ? html`<p class="panel note-panel"><strong>Note:</strong> ${noteText(ctx, s.note)}</p>` : ''}
<div class="panel"><dl class="kv">
<dt>Workflow</dt><dd>${s.workflowName}</dd>
<dt>Schedule</dt><dd>${expressionCell(view)}</dd>
<dt>Zone</dt><dd>${s.timezone}</dd>
<dt>Policies</dt><dd>${policiesText(s)}</dd>
<dt>Runs</dt><dd>${runsText(s)}${s.maxRuns === null ? '' : html` <span class="muted small">(disables itself at the limit)</span>`}</dd>
${s.startAt !== null || s.endAt !== null ? html`<dt>Active</dt><dd class="mono small">${formatInstant(s.startAt)} → ${formatInstant(s.endAt)} UTC</dd>` : ''}
<dt>Next runs</dt><dd>${nextRunsList(view)}</dd>
<dt>Id</dt><dd class="mono small">${s.id}</dd>
</dl>
${
  ctx.readOnly
    ? ''
    : html`<div class="actions" style="margin-top:12px">${primaryActions(ctx, view)}</div><div class="actions">${moreActions(ctx, view)}</div>
<details class="more" id="edit-schedule"><summary>Edit schedule</summary>${editScheduleForm(ctx, s, workflows)}</details>`
}
<p class="small"><a href="${link(ctx, `executions?schedule=${encodeURIComponent(s.id)}`)}">Executions of this schedule →</a></p></div>
<h2>Stats</h2>${statsPanel(stats)}
<h2>Ledger</h2>
${ledger.items.length === 0 ? html`<p class="panel muted">No occurrences yet.</p>` : html`<div class="panel"><ol class="timeline" aria-label="Ledger">${ledger.items.map((row) => ledgerEntry(ctx, row, s.timezone))}</ol></div>`}
${pager(ctx, ledger)}`;
  return layout(ctx, 'schedules', scheduleName(view), body);
}
