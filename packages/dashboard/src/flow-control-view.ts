import {
  type ConcurrencyGroupInfo,
  describeConcurrencyRule,
  describeWaitingFor,
  effectivePriority,
  type PipelineSummary,
  type WorkflowInfo,
} from '@orreryjs/core';
import { formatInstant } from './format.js';
import { html, type SafeHtml } from './html.js';

/*
 * Flow control as the pages show it: why a pending execution waits, a workflow's priority and
 * concurrency rules, and its groups' occupancy. The words come from core, shared with the CLI.
 */

/** `waiting for sync/customer=acme (2/2 active)` or `starts at 2026-11-27 09:00:00 UTC`; null when nothing holds it. */
export function waitingText(summary: Pick<PipelineSummary, 'waitingFor'>): string | null {
  return summary.waitingFor === null
    ? null
    : describeWaitingFor(summary.waitingFor, (at) => `${formatInstant(at)} UTC`);
}

/**
 * The reason beside a pending execution's status badge (nothing for one that does not wait).
 * A group's name may be one long word (a customer id): `group-name` lets it break anywhere.
 */
export function waitingNote(summary: Pick<PipelineSummary, 'waitingFor'>): SafeHtml {
  const text = waitingText(summary);
  return text === null ? html`` : html` <span class="small muted group-name" data-waiting>${text}</span>`;
}

/** A workflow version's priority and concurrency rules, as terms of a `dl.kv`. */
export function flowControlTerms(workflow: Pick<WorkflowInfo, 'priority' | 'concurrency'>): SafeHtml {
  const rules = workflow.concurrency ?? [];
  return html`<dt>Priority</dt><dd data-priority>${effectivePriority(workflow.priority)}</dd>
<dt>Concurrency</dt><dd data-concurrency>${
    rules.length === 0
      ? html`<span class="muted">no limit</span>`
      : rules.map((rule, i) => html`${i > 0 ? html`<br>` : ''}${describeConcurrencyRule(rule)}`)
  }</dd>`;
}

/** Each concurrency group with unfinished executions: active of the limit, and queued. */
export function groupsTable(groups: readonly ConcurrencyGroupInfo[]): SafeHtml {
  if (groups.length === 0) return html`<p class="small muted">No concurrency group has unfinished executions.</p>`;
  const rows = groups.map(
    (g) => html`<tr data-group="${g.group}"><td data-label="Group"><div class="mono group-name">${g.group}</div></td>
<td data-label="Active"><div data-active>${g.active} / ${g.limit}</div></td>
<td data-label="Queued"><div data-queued>${g.queued}</div></td></tr>`,
  );
  return html`<table class="cards groups"><thead><tr><th>Group</th><th>Active / limit</th><th>Queued</th></tr></thead><tbody>${rows}</tbody></table>`;
}
