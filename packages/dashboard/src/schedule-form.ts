import {
  CATCHUP_POLICIES,
  CATCHUP_POLICY_DESCRIPTIONS,
  DST_DEFAULTS,
  DST_GAP_CHOICES,
  DST_GAP_DESCRIPTIONS,
  DST_REPEATED_CHOICES,
  DST_REPEATED_DESCRIPTIONS,
  MAX_NOTE_LENGTH,
  OVERLAP_POLICIES,
  OVERLAP_POLICY_DESCRIPTIONS,
  SCHEDULE_DEFAULTS,
} from '@orreryjs/cron';
import { type CronSchedule, type CronScheduleInput, ValidationError } from '@orreryjs/runner';
import { html, type SafeHtml } from './html.js';
import { parseInstant } from './input.js';
import { actionForm, type PageContext } from './layout.js';

// The add and edit forms of a schedule, and how their bodies become a CronScheduleInput.
// Every check of the values themselves is the engine's: this file only turns form text into
// the input's types, so the forms, the JSON API and the runner refuse the same things.

/**
 * What the preview area says before app.js fills it (and when the expression is emptied):
 * the runs come from `api/preview` as the expression, zone, DST rules or start are changed.
 */
const PREVIEW_HINT = 'The next runs appear here as you type the expression.';

/** The form's names of the two DST rules; a JSON body may send `dst` as an object instead. */
const DST_FIELDS = { repeated: 'dst.repeated', gap: 'dst.gap' } as const;

/**
 * Reads the body of the add or edit form, or a JSON body with CronScheduleInput's fields,
 * into a schedule input. An empty optional field means its default (no run limit, no note,
 * the default DST rule, no window bound), so a form stores what it shows. Other keys pass
 * through, so that the engine refuses a misspelt one by name.
 * @throws ValidationError for a context that is not JSON or an instant that is not a date.
 */
export function readScheduleBody(body: Record<string, unknown>): Partial<CronScheduleInput> {
  // No prototype: a "__proto__" key stays a key, which the engine refuses as unknown.
  const input: Record<string, unknown> = Object.create(null);
  for (const [key, value] of Object.entries(body)) {
    if (key === DST_FIELDS.repeated || key === DST_FIELDS.gap) continue;
    const read = Object.hasOwn(READERS, key) ? READERS[key] : undefined;
    input[key] = read === undefined ? value : read(value, key);
  }
  if (DST_FIELDS.repeated in body || DST_FIELDS.gap in body) {
    const rules = Object.entries(DST_FIELDS).filter(([, field]) => body[field] !== undefined && body[field] !== '');
    input.dst = rules.length === 0 ? null : Object.fromEntries(rules.map(([rule, field]) => [rule, body[field]]));
  }
  return input as Partial<CronScheduleInput>;
}

const READERS: Record<string, (value: unknown, field: string) => unknown> = {
  timezone: (value) => (value === '' ? SCHEDULE_DEFAULTS.timezone : value),
  context: readContext,
  enabled: readBoolean,
  pauseOnFailure: readBoolean,
  maxRuns: (value) => (value === '' ? null : readNumber(value)),
  jitterMs: (value) => (value === '' ? SCHEDULE_DEFAULTS.jitterMs : readNumber(value)),
  note: (value) => (value === '' ? null : value),
  startAt: readInstant,
  endAt: readInstant,
};

function readContext(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  if (value.trim() === '') return {};
  try {
    return JSON.parse(value);
  } catch (error) {
    throw new ValidationError(`context must be a JSON object such as {"region": "eu"}: ${(error as Error).message}.`);
  }
}

/** A checkbox sends "true" (or "on"); its hidden twin sends "false" when it is unchecked. */
function readBoolean(value: unknown): unknown {
  if (value === 'true' || value === 'on') return true;
  return value === 'false' ? false : value;
}

/** A number field's text as a number; anything else is left for the engine to refuse by name. */
function readNumber(value: unknown): unknown {
  return typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value;
}

function readInstant(value: unknown, field: string): unknown {
  if (value === '' || value === null) return null;
  return typeof value === 'string' ? parseInstant(field, value) : value;
}

/** `YYYY-MM-DDTHH:MM:SS` in UTC, the value a `datetime-local` input shows. */
function localInputValue(at: Date | null): string {
  return at === null ? '' : at.toISOString().slice(0, 19);
}

/**
 * A select of policy choices. Each option shows only the choice's name, so that none is cut
 * at any width; the hint under it says what the selected one does, and app.js updates it on
 * change from `data-descriptions`. `unset` is a first option for "no choice: the default".
 */
function choiceSelect<T extends string>(
  name: string,
  choices: readonly T[],
  descriptions: Readonly<Record<T, string>>,
  selected: string,
  unset?: { label: string; description: string },
): SafeHtml {
  const described: Record<string, string> =
    unset === undefined ? { ...descriptions } : { '': unset.description, ...descriptions };
  return html`<select name="${name}" data-descriptions="${JSON.stringify(described)}">${
    unset === undefined ? '' : html`<option value="">${unset.label}</option>`
  }${choices.map(
    (choice) => html`<option value="${choice}"${choice === selected ? html` selected` : ''}>${choice}</option>`,
  )}</select><span class="small muted choice-hint">${described[selected] ?? ''}</span>`;
}

/** A checkbox whose unchecked state is sent too (as "false"), so that an edit can turn it off. */
function checkbox(name: string, label: string, checked: boolean): SafeHtml {
  return html`<label class="check"><input type="hidden" name="${name}" value="false"><input type="checkbox" name="${name}" value="true"${
    checked ? html` checked` : ''
  }> ${label}</label>`;
}

function dstSelect(rule: 'repeated' | 'gap', current: CronSchedule['dst']): SafeHtml {
  const { fixedHour, realClock } = DST_DEFAULTS;
  const selected = current?.[rule] ?? '';
  const unset = {
    label: 'default',
    description: `${fixedHour[rule]} for a fixed hour, ${realClock[rule]} for * hours`,
  };
  return rule === 'repeated'
    ? choiceSelect(DST_FIELDS.repeated, DST_REPEATED_CHOICES, DST_REPEATED_DESCRIPTIONS, selected, unset)
    : choiceSelect(DST_FIELDS.gap, DST_GAP_CHOICES, DST_GAP_DESCRIPTIONS, selected, unset);
}

/**
 * The fields of a schedule, filled with `schedule`'s values (an edit) or the defaults (an
 * add). Names are CronScheduleInput's, except the two DST rules (see {@link DST_FIELDS}).
 */
function fields(workflows: readonly string[], schedule: CronSchedule | null): SafeHtml {
  const s = schedule;
  const workflow = s?.workflowName ?? '';
  const names = workflow === '' || workflows.includes(workflow) ? workflows : [workflow, ...workflows];
  return html`<div class="fields">
<label>Name <input name="name" required value="${s?.name ?? ''}" placeholder="nightly-report"></label>
<label>Workflow ${
    names.length === 0
      ? html`<input name="workflowName" required value="${workflow}">`
      : html`<select name="workflowName" required>${names.map(
          (name) => html`<option${name === workflow ? html` selected` : ''}>${name}</option>`,
        )}</select>`
  }</label>
<label>Cron expression <input name="cronExpression" class="mono" required value="${s?.cronExpression ?? ''}" placeholder="30 2 * * *"></label>
<label>Time zone <input name="timezone" value="${s?.timezone ?? SCHEDULE_DEFAULTS.timezone}" placeholder="Europe/Paris"></label>
<div class="wide cron-preview" data-cron-preview aria-live="polite"><p class="small muted">${PREVIEW_HINT}</p></div>
<label>Overlap, when a slot comes while an earlier one is active ${choiceSelect(
    'overlapPolicy',
    OVERLAP_POLICIES,
    OVERLAP_POLICY_DESCRIPTIONS,
    s?.overlapPolicy ?? SCHEDULE_DEFAULTS.overlapPolicy,
  )}</label>
<label>Catch-up, for slots missed while no runner ran ${choiceSelect(
    'catchupPolicy',
    CATCHUP_POLICIES,
    CATCHUP_POLICY_DESCRIPTIONS,
    s?.catchupPolicy ?? SCHEDULE_DEFAULTS.catchupPolicy,
  )}</label>
<label>Max runs (empty: no limit) <input name="maxRuns" type="number" min="1" step="1" value="${s?.maxRuns ?? ''}"></label>
<label>Jitter (ms) <input name="jitterMs" type="number" min="0" step="1" value="${s?.jitterMs ?? SCHEDULE_DEFAULTS.jitterMs}"></label>
<label>DST, a repeated wall time fires ${dstSelect('repeated', s?.dst ?? null)}</label>
<label>DST, a wall time in a gap ${dstSelect('gap', s?.dst ?? null)}</label>
<label>Active from (UTC) <input name="startAt" type="datetime-local" step="1" value="${localInputValue(s?.startAt ?? null)}"></label>
<label>Active until (UTC) <input name="endAt" type="datetime-local" step="1" value="${localInputValue(s?.endAt ?? null)}"></label>
<label class="wide">Context (JSON object) <textarea name="context" rows="2" class="mono">${JSON.stringify(s?.context ?? {})}</textarea></label>
<label class="wide">Note (why it is paused, who owns it) <input name="note" maxlength="${MAX_NOTE_LENGTH}" value="${s?.note ?? ''}"></label>
${checkbox('pauseOnFailure', 'Pause on failure: a failed pipeline disables the schedule', s?.pauseOnFailure ?? SCHEDULE_DEFAULTS.pauseOnFailure)}
${s === null ? checkbox('enabled', 'Enabled: fire from the next slot on', SCHEDULE_DEFAULTS.enabled) : ''}
</div>`;
}

/** The Add schedule form, posted to `api/schedules`. Nothing is drawn in read-only mode. */
export function addScheduleForm(ctx: PageContext, workflows: readonly string[]): SafeHtml {
  return actionForm(ctx, {
    action: 'api/schedules',
    label: 'Add schedule',
    fields: fields(workflows, null),
    className: 'schedule-form',
  });
}

/** The Edit form of `schedule`, sent as a PATCH to its API path. Nothing is drawn in read-only mode. */
export function editScheduleForm(ctx: PageContext, schedule: CronSchedule, workflows: readonly string[]): SafeHtml {
  return actionForm(ctx, {
    action: `api/schedules/${encodeURIComponent(schedule.id)}`,
    method: 'PATCH',
    label: 'Save changes',
    fields: fields(workflows, schedule),
    className: 'schedule-form',
  });
}
