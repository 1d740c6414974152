import type {
  CronExecution,
  CronExecutionStats,
  CronSchedule,
  PipelineExecution,
  PipelineResult,
  PipelineStatus,
  PipelineSummary,
  RunnerHealth,
} from '@orreryjs/runner';

/** One task of a stored workflow definition, as {@link DashboardClient.listWorkflows} returns it. */
export interface DashboardWorkflowTask {
  id: string;
  dependsOn: string[];
  trigger?: string;
  retry?: { maxAttempts?: number; backoff?: string; initialDelayMs?: number; maxDelayMs?: number };
  timeoutMs?: number | null;
  hasWhen?: boolean;
}

/** A workflow known to the database (DESIGN.md `WorkflowInfo`). */
export interface DashboardWorkflow {
  name: string;
  version: string;
  description: string | null;
  tasks: DashboardWorkflowTask[];
  registeredAt: Date;
  lastSeenAt: Date;
}

/** A runner process known to the database (DESIGN.md `RunnerInfo`). */
export interface DashboardRunner {
  id: string;
  hostname: string;
  pid: number;
  workflows: string[];
  startedAt: Date;
  heartbeatAt: Date;
  stoppedAt: Date | null;
  alive: boolean;
}

/** A schedule as the dashboard reads it: `CronSchedule`, with the fields newer runners add. */
export type DashboardSchedule = CronSchedule & { note?: string | null; runCount?: number; maxRuns?: number | null };

/** An execution summary: `PipelineSummary`, with the schedule link newer runners add. */
export type DashboardExecution = PipelineSummary & { scheduleId?: string | null; scheduledTime?: Date | null };

/**
 * What the dashboard calls on its client: the methods of `OrreryClient` (or a `DefaultRunner`,
 * which has them all). The optional ones light up their pages and buttons when present:
 * Workflows (`listWorkflows`), Runners (`listRunners`) and Retry (`retryExecution`).
 */
export interface DashboardClient {
  listCronSchedules(filter?: {
    enabledOnly?: boolean;
    workflowName?: string;
    limit?: number;
    offset?: number;
  }): Promise<DashboardSchedule[]>;
  getCronSchedule(idOrName: string): Promise<DashboardSchedule>;
  getCronExecutionHistory(idOrName: string, options?: { limit?: number; offset?: number }): Promise<CronExecution[]>;
  getCronExecutionStats(options?: { since?: Date }): Promise<CronExecutionStats>;
  setCronScheduleEnabled(idOrName: string, enabled: boolean, options?: { note?: string }): Promise<DashboardSchedule>;
  triggerCronSchedule(idOrName: string): Promise<PipelineExecution>;
  backfillCronSchedule(
    idOrName: string,
    range: { start: Date; end: Date },
  ): Promise<{ created: number; existing: number }>;
  deleteCronSchedule(idOrName: string): Promise<void>;
  listExecutions(filter?: {
    workflowName?: string;
    status?: PipelineStatus;
    scheduleId?: string;
    limit?: number;
    offset?: number;
  }): Promise<DashboardExecution[]>;
  getExecutionStatus(executionId: string): Promise<PipelineStatus>;
  getExecutionResult(executionId: string): Promise<PipelineResult>;
  cancelExecution(executionId: string): Promise<void>;
  pauseExecution(executionId: string, reason?: string): Promise<void>;
  resumeExecution(executionId: string): Promise<void>;
  /** A runner's own health; a plain OrreryClient has none, and the overview then reports the fleet's. */
  health?(): Promise<Pick<RunnerHealth, 'status'> & Partial<RunnerHealth>>;
  listWorkflows?(): Promise<DashboardWorkflow[]>;
  listRunners?(options?: { includeStopped?: boolean }): Promise<DashboardRunner[]>;
  retryExecution?(executionId: string): Promise<PipelineExecution>;
}
