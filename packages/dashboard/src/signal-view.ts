import { describeSignalWait, MAX_SIGNAL_NAME_CHARS, type SignalWait, signalWaitOf } from '@orreryjs/core';
import type { TaskResult, WorkflowTaskInfo } from '@orreryjs/runner';
import { formatInstant } from './format.js';
import { html, type SafeHtml } from './html.js';
import { actionForm, type PageContext } from './layout.js';

/*
 * Wait tasks on the execution page: which signal each waiting one waits for and until when
 * (the words come from core, shared with the CLI), and the Signal action that sends it.
 */

/**
 * The tasks of an execution that wait for a signal now, by task id. The signal's name comes
 * from the stored definition (`waitFor`): task rows do not say it; none without a definition.
 */
export function signalWaits(
  tasks: readonly TaskResult[],
  definition: readonly WorkflowTaskInfo[] | null,
): Map<string, SignalWait> {
  const byId = new Map((definition ?? []).map((task) => [task.id, task]));
  const waits = new Map<string, SignalWait>();
  for (const task of tasks) {
    const wait = signalWaitOf(task, byId.get(task.taskId));
    if (wait !== null) waits.set(task.taskId, wait);
  }
  return waits;
}

/** `waiting for signal approved (until 2026-11-27 09:00:00 UTC)`, or `(no timeout)`. */
function signalWaitText(wait: SignalWait): string {
  return describeSignalWait(wait, (at) => `${formatInstant(at)} UTC`);
}

/**
 * What a waiting wait task's section shows: what it waits for, and the Signal form (nothing
 * in read-only mode). The name is prefilled from `waitFor.signal`; the payload is optional
 * JSON, which app.js parses before sending (`data-json`): text that does not parse is
 * reported and nothing is sent.
 */
export function signalWaitPanel(ctx: PageContext, executionId: string, wait: SignalWait): SafeHtml {
  const fields = html`<label>Signal <input name="name" value="${wait.signal}" required maxlength="${MAX_SIGNAL_NAME_CHARS}" autocomplete="off"></label>
<label>Payload <textarea name="payload" rows="2" data-json="Payload" placeholder='JSON, optional: {"by":"ada"}' spellcheck="false"></textarea></label>`;
  return html`<p class="small signal-wait" data-signal-wait="${wait.signal}">${signalWaitText(wait)}</p>${actionForm(
    ctx,
    {
      action: `api/executions/${executionId}/signal`,
      label: 'Signal',
      fields,
      className: 'signal-form',
    },
  )}`;
}
