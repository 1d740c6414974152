/**
 * The demo's verdict, read from the database after the workers are gone: the schedule's
 * ledger (getCronExecutionHistory) against the slots the cron expression says were due, and
 * the pipelines those occurrences started.
 */
import { occurrencesBetween } from '@orreryjs/cron';
import type { DefaultRunner, PipelineResult } from '@orreryjs/runner';
import { CRON_EXPRESSION, SCHEDULE_NAME, WORKFLOW_NAME } from './workflow.js';

/** What the parent saw the workers do, keyed by pipeline id. */
export interface Observed {
  firedBy: Map<string, string>;
  tasksRanOn: Map<string, Set<string>>;
}

export interface Verdict {
  expected: number;
  fired: number;
  completed: number;
  lost: number;
  duplicates: number;
  incomplete: number;
}

const hms = (date: Date) => date.toISOString().slice(11, 19);

/**
 * Prints one row per due slot and the totals. `lost` counts due slots (first slot up to
 * `cutoff`) without a `handed_off` ledger row; `duplicates` counts slots with more than one
 * ledger row or more than one pipeline.
 */
export async function printSummary(
  admin: DefaultRunner,
  firstSlot: Date,
  cutoff: Date,
  observed: Observed,
): Promise<Verdict> {
  const ledger = (await admin.getCronExecutionHistory(SCHEDULE_NAME, { limit: 1000 })).reverse();
  const summaries = await admin.listExecutions({ workflowName: WORKFLOW_NAME, limit: 1000 });
  const pipelines = await Promise.all(summaries.map((p) => admin.getExecutionResult(p.executionId)));
  const pipelinesBySlot = groupBy(pipelines, (p) => String(p.finalContext.scheduled_time));
  const ledgerBySlot = groupBy(ledger, (row) => row.scheduledTime.toISOString());
  const due = occurrencesBetween(CRON_EXPRESSION, { start: firstSlot, end: new Date(cutoff.getTime() + 1) });
  const slots = [...new Set([...due.map((d) => d.toISOString()), ...ledgerBySlot.keys()])].sort();

  const header = ['slot', 'ledger', 'source', 'lag', 'fired by', 'tasks ran on', 'pipeline', 'retried tasks'];
  const rows: string[][] = [];
  let lost = 0;
  let duplicates = 0;
  for (const slot of slots) {
    const entries = ledgerBySlot.get(slot) ?? [];
    const runs = pipelinesBySlot.get(slot) ?? [];
    const isDue = due.some((d) => d.toISOString() === slot);
    if (isDue && !entries.some((e) => e.status === 'handed_off')) lost += 1;
    if (entries.length > 1 || runs.length > 1) duplicates += 1;
    const entry = entries[0];
    const run = runs[0];
    const lagMs = entry?.handedOffAt ? entry.handedOffAt.getTime() - entry.scheduledTime.getTime() : null;
    const id = entry?.pipelineExecutionId ?? run?.executionId ?? '';
    rows.push([
      hms(new Date(slot)),
      entry ? entry.status + (entry.recovered ? ' (recovered)' : '') : 'LOST: no row',
      entry?.source ?? '-',
      lagMs === null ? '-' : `${lagMs} ms`,
      observed.firedBy.get(id) ?? '-',
      [...(observed.tasksRanOn.get(id) ?? [])].join(' → ') || '-',
      runs.length > 1 ? `DUPLICATE ×${runs.length}` : (run?.status ?? '-'),
      run ? retried(run) : '-',
    ]);
  }
  printTable(header, rows);

  const fired = ledger.filter((e) => e.status === 'handed_off').length;
  const completed = pipelines.filter((p) => p.status === 'completed').length;
  const verdict = {
    expected: due.length,
    fired,
    completed,
    lost,
    duplicates,
    incomplete: pipelines.length - completed,
  };
  const stats = await admin.getCronExecutionStats();
  const recovery = await admin.getRecoveryStats();
  console.log('');
  printTable(
    ['', ''],
    [
      [`slots due (${hms(firstSlot)} to ${hms(cutoff)})`, String(verdict.expected)],
      ['occurrences fired (handed_off)', String(fired)],
      ['pipelines completed', `${completed} of ${pipelines.length}`],
      ['lost (due slot, no handed_off row)', String(lost)],
      ['duplicates (slot with > 1 pipeline)', String(duplicates)],
      ['fire lag mean / p99', `${Math.round(stats.meanDelayMs ?? 0)} ms / ${Math.round(stats.p99DelayMs ?? 0)} ms`],
      ['occurrences recovered / abandoned', `${recovery.successfulRecoveries} / ${stats.abandonedExecutions}`],
    ],
  );
  return verdict;
}

function retried(run: PipelineResult): string {
  const more = run.tasks.filter((t) => t.attempts > 1).map((t) => `${t.taskId} ×${t.attempts}`);
  return more.join(', ') || '-';
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: string[]) => `  ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ')}`.trimEnd();
  if (header.some((h) => h !== '')) {
    console.log(line(header));
    console.log(line(widths.map((w) => '─'.repeat(w))));
  }
  for (const row of rows) console.log(line(row));
}
