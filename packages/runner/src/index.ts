/**
 * @orreryjs/runner — the DefaultRunner: durable task scheduling and execution for Orrery
 * workflows, on SQLite or PostgreSQL; and the OrreryClient, for processes that start and
 * manage work without the task code.
 */

// Core names a runner user needs, so that one import is enough.
export {
  type Clock,
  type ConcurrencyGroupInfo,
  type ConcurrencyRule,
  ConfigurationError,
  Context,
  ContextError,
  DatabaseError,
  defineWorkflow,
  type ExecuteOptions,
  ExecutionNotFoundError,
  IdempotencyConflictError,
  InvalidCronExpressionError,
  InvalidTimezoneError,
  isOrreryError,
  type Json,
  type ListExecutionsFilter,
  type Logger,
  ManualClock,
  type MapInstance,
  NonRetryableError,
  type OnLimit,
  OrreryError,
  type PipelineExecution,
  type PipelineExecutor,
  type PipelineResult,
  type PipelineStatus,
  type PipelineSummary,
  PipelineTimeoutError,
  type RetryPolicy,
  ScheduleConflictError,
  ScheduleNotFoundError,
  ScheduleOverlapError,
  type TaskAttempt,
  type TaskDefinition,
  type TaskResult,
  type TaskRunInfo,
  type TaskStatus,
  type TriggerRule,
  ValidationError,
  type WaitingFor,
  type Workflow,
  type WorkflowDefinition,
  type WorkflowInfo,
  WorkflowNotFoundError,
  type WorkflowTaskInfo,
  WorkflowValidationError,
} from '@orreryjs/core';
// Cron types the runner's methods take and return, and its cron event payloads.
export type {
  CronAbandonedEvent,
  CronBufferedEvent,
  CronEvents,
  CronExecution,
  CronExecutionStats,
  CronFiredEvent,
  CronLostEvent,
  CronMissedEvent,
  CronPausedEvent,
  CronRecoveredEvent,
  CronSchedule,
  CronScheduleInput,
  CronSkippedEvent,
  DstRules,
  HistoryOptions,
  ListSchedulesFilter,
  RecoveryStats,
  SyncSchedulesOptions,
  SyncSchedulesResult,
  TriggerOptions,
} from '@orreryjs/cron';
export { ADMISSION_SWEEP_INTERVAL_MS } from './admission.js';
export { OrreryClient } from './client.js';
export type { OrreryClientConfig } from './client-config.js';
export { type DefaultRunnerConfig, type RetentionConfig, RUNNER_DEFAULTS } from './config.js';
export type {
  PipelineCancelledEvent,
  PipelineCreatedEvent,
  PipelineEvents,
  PipelineFinishedEvent,
  PipelineRetriedEvent,
  RunnerEvents,
  TaskAttemptEvent,
  TaskCompletedEvent,
  TaskFailedEvent,
  TaskSkippedEvent,
} from './events.js';
export type { ExecuteRequest } from './execute-requests.js';
export type { HealthStatus, RunnerHealth } from './health.js';
export { DefaultRunner, SHUTDOWN_TIMEOUT_MS, type ShutdownOptions } from './runner.js';
export {
  type ListRunnersOptions,
  RUNNER_ALIVE_WINDOW_MS,
  RUNNER_FORGOTTEN_AFTER_MS,
  type RunnerInfo,
} from './runner-info.js';
