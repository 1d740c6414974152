import type { ConcurrencyGroupInfo } from '@orreryjs/core';
import type {
  CronExecution,
  CronExecutionStats,
  CronSchedule,
  PipelineResult,
  PipelineStatus,
  PipelineSummary,
  RunnerHealth,
  RunnerInfo,
  WorkflowInfo,
} from '@orreryjs/runner';
import { type DashboardClient, runnerHealth } from './client.js';
import { describeCron, nextRuns } from './format.js';
import { type PageWindow, PIPELINE_STATUSES } from './input.js';

/** A page of a list, and whether another follows. */
export interface Page<T> {
  items: T[];
  limit: number;
  offset: number;
  hasMore: boolean;
}

/** A ledger row and the status of the pipeline it handed off, if any (null: none, or deleted since). */
export type LedgerRow = CronExecution & { pipelineStatus: PipelineStatus | null };

/** A schedule with what the Schedules page shows beside it. */
export interface ScheduleView {
  schedule: CronSchedule;
  /** The expression in words, or null when it cannot be described. */
  description: string | null;
  /** The next 5 runs (UTC instants; pages show them in the schedule's zone and in UTC). */
  nextRuns: Date[];
  /** The newest ledger row and the status of its pipeline, if any. */
  lastOccurrence: LedgerRow | null;
}

/** Counts and fire lag of a set of ledger rows. */
export interface LedgerStats {
  rows: number;
  byStatus: Record<string, number>;
  recovered: number;
  meanLagMs: number | null;
  p99LagMs: number | null;
}

async function page<T>(
  window: PageWindow,
  fetchRows: (limit: number, offset: number) => Promise<T[]>,
): Promise<Page<T>> {
  const rows = await fetchRows(window.limit + 1, window.offset);
  return {
    items: rows.slice(0, window.limit),
    limit: window.limit,
    offset: window.offset,
    hasMore: rows.length > window.limit,
  };
}

/**
 * The row with its pipeline's status: a slot handed off to a pipeline that failed must not
 * read as a success. A pipeline deleted by retention has no status (null).
 */
async function withPipelineStatus(client: DashboardClient, row: CronExecution): Promise<LedgerRow> {
  const pipelineStatus =
    row.pipelineExecutionId === null
      ? null
      : await client.getExecutionStatus(row.pipelineExecutionId).catch(() => null);
  return { ...row, pipelineStatus };
}

async function lastOccurrence(client: DashboardClient, scheduleId: string): Promise<LedgerRow | null> {
  const [row] = await client.getCronExecutionHistory(scheduleId, { limit: 1 });
  return row === undefined ? null : withPipelineStatus(client, row);
}

/** Describes one schedule: words, next runs and its latest occurrence. */
export async function viewSchedule(client: DashboardClient, schedule: CronSchedule, now: Date): Promise<ScheduleView> {
  return {
    schedule,
    description: describeCron(schedule.cronExpression),
    nextRuns: schedule.enabled ? nextRuns(schedule, now) : [],
    lastOccurrence: await lastOccurrence(client, schedule.id),
  };
}

/** The names of the workflows runners registered, sorted: what a schedule can run. */
export async function workflowNames(client: DashboardClient): Promise<string[]> {
  return [...new Set((await client.listWorkflows()).map((workflow) => workflow.name))].sort();
}

/** One page of schedules, each described. */
export async function loadSchedules(
  client: DashboardClient,
  window: PageWindow,
  now: Date,
): Promise<Page<ScheduleView>> {
  const schedules = await page(window, (limit, offset) => client.listCronSchedules({ limit, offset }));
  return { ...schedules, items: await Promise.all(schedules.items.map((s) => viewSchedule(client, s, now))) };
}

/** Ledger counts by status and fire lag (handedOffAt − scheduledTime) of the given rows. */
export function ledgerStats(rows: CronExecution[]): LedgerStats {
  const byStatus: Record<string, number> = {};
  const lags: number[] = [];
  let recovered = 0;
  for (const row of rows) {
    byStatus[row.status] = (byStatus[row.status] ?? 0) + (row.status === 'missed' ? Math.max(1, row.missedCount) : 1);
    if (row.recovered) recovered += 1;
    if (row.handedOffAt !== null && row.source !== 'manual' && row.source !== 'backfill') {
      lags.push(row.handedOffAt.getTime() - row.scheduledTime.getTime());
    }
  }
  lags.sort((a, b) => a - b);
  const mean = lags.length === 0 ? null : lags.reduce((a, b) => a + b, 0) / lags.length;
  const p99 = lags.length === 0 ? null : (lags[Math.min(lags.length - 1, Math.ceil(lags.length * 0.99) - 1)] ?? null);
  return { rows: rows.length, byStatus, recovered, meanLagMs: mean, p99LagMs: p99 };
}

/** How many recent ledger rows the schedule detail's stats cover. */
export const STATS_WINDOW = 1000;

/**
 * A schedule, its stats over its latest {@link STATS_WINDOW} slots, and one page of its
 * ledger, each row with its pipeline's status.
 */
export async function loadScheduleDetail(
  client: DashboardClient,
  idOrName: string,
  window: PageWindow,
  now: Date,
): Promise<{ view: ScheduleView; stats: LedgerStats; ledger: Page<LedgerRow> }> {
  const schedule = await client.getCronSchedule(idOrName);
  const [view, recent, ledger] = await Promise.all([
    viewSchedule(client, schedule, now),
    client.getCronExecutionHistory(schedule.id, { limit: STATS_WINDOW }),
    page(window, (limit, offset) => client.getCronExecutionHistory(schedule.id, { limit, offset })),
  ]);
  const rows = await Promise.all(ledger.items.map((row) => withPipelineStatus(client, row)));
  return { view, stats: ledgerStats(recent), ledger: { ...ledger, items: rows } };
}

/** A page of a schedule's ledger alone. */
export function loadLedger(
  client: DashboardClient,
  idOrName: string,
  window: PageWindow,
): Promise<Page<CronExecution>> {
  return page(window, (limit, offset) => client.getCronExecutionHistory(idOrName, { limit, offset }));
}

/** Filters of the Executions page. */
export interface ExecutionFilter {
  status?: PipelineStatus;
  workflowName?: string;
  /** A schedule id or name. */
  schedule?: string;
}

/** One page of executions, newest first; a schedule filter takes a schedule id or name. */
export async function loadExecutions(
  client: DashboardClient,
  filter: ExecutionFilter,
  window: PageWindow,
): Promise<Page<PipelineSummary>> {
  const scheduleId = filter.schedule === undefined ? undefined : (await client.getCronSchedule(filter.schedule)).id;
  return page(window, (limit, offset) =>
    client.listExecutions({ status: filter.status, workflowName: filter.workflowName, scheduleId, limit, offset }),
  );
}

/** An execution's result with what its summary adds: its delayed start, its priority and what it waits for. */
export type ExecutionDetail = PipelineResult & Pick<PipelineSummary, 'runAt' | 'priority' | 'waitingFor'>;

/** One execution as its page and `api/executions/:id` show it. */
export async function loadExecutionDetail(client: DashboardClient, id: string): Promise<ExecutionDetail> {
  const [result, { runAt, priority, waitingFor }] = await Promise.all([
    client.getExecutionResult(id),
    client.getExecutionSummary(id),
  ]);
  return { ...result, runAt, priority, waitingFor };
}

/**
 * The occupancy of the concurrency groups of each workflow that has rules in some stored
 * version, by workflow name (a workflow without rules has no groups to ask about).
 */
export async function loadWorkflowGroups(
  client: DashboardClient,
  workflows: readonly WorkflowInfo[],
): Promise<Map<string, ConcurrencyGroupInfo[]>> {
  const limited = [...new Set(workflows.filter((w) => w.concurrency !== null).map((w) => w.name))];
  const groups = await Promise.all(limited.map((workflowName) => client.listConcurrencyGroups({ workflowName })));
  return new Map(limited.map((name, i) => [name, groups[i]!]));
}

/** What the Overview page shows. */
export interface Overview {
  /**
   * The runner's own health when the client is a runner (fleet conditions never make it
   * unhealthy); else, with no process to judge, `ok` while some runner is alive and `degraded`
   * (a warning, not `unhealthy`) while none is.
   */
  health: Pick<RunnerHealth, 'status'> & Partial<RunnerHealth>;
  /** Executions per status among the latest {@link COUNT_CAP}; `capped` when there may be more. */
  executionsByStatus: Record<string, { count: number; capped: boolean }>;
  /** Ledger counts and fire lag (mean and p99) over the last 24 hours. */
  cron: CronExecutionStats;
  runners: RunnerInfo[];
  /** Enabled schedules whose workflow no live runner has registered. */
  orphanSchedules: CronSchedule[];
}

/** Executions counted per status on the overview before it says "500+". */
export const COUNT_CAP = 500;

/** Health, execution counts, cron lag and lost work, live runners and orphaned schedules. */
export async function loadOverview(client: DashboardClient): Promise<Overview> {
  const [ownHealth, counts, cron, runners] = await Promise.all([
    runnerHealth(client),
    Promise.all(PIPELINE_STATUSES.map((status) => client.listExecutions({ status, limit: COUNT_CAP + 1 }))),
    client.getCronExecutionStats(),
    client.listRunners(),
  ]);
  const executionsByStatus: Overview['executionsByStatus'] = {};
  PIPELINE_STATUSES.forEach((status, i) => {
    const n = counts[i]?.length ?? 0;
    executionsByStatus[status] = { count: Math.min(n, COUNT_CAP), capped: n > COUNT_CAP };
  });
  const served = new Set(runners.filter((r) => r.alive).flatMap((r) => r.workflows));
  const orphanSchedules: CronSchedule[] = [];
  for (let offset = 0; offset < 20_000; offset += 500) {
    const batch = await client.listCronSchedules({ enabledOnly: true, limit: 500, offset });
    orphanSchedules.push(...batch.filter((s) => !served.has(s.workflowName)));
    if (batch.length < 500) break;
  }
  const health = ownHealth ?? { status: runners.some((r) => r.alive) ? ('ok' as const) : ('degraded' as const) };
  return { health, executionsByStatus, cron, runners, orphanSchedules };
}
