export { type Clock, ManualClock, systemClock } from './clock.js';
export {
  defaultApplicationName,
  type ListenOption,
  POOL_DEFAULTS,
  type PoolOptions,
  type ResolvedPoolOptions,
  resolveListenOption,
  resolvePoolOptions,
  validateApplicationName,
} from './connection-options.js';
export {
  assertContextSize,
  Context,
  type ContextDelta,
  contextDelta,
  DEFAULT_MAX_CONTEXT_BYTES,
  mergeContext,
} from './context.js';
export type {
  CatchupPolicy,
  ClaimDueRequest,
  ClaimLostRequest,
  CronExecutionRow,
  CronExecutionSource,
  CronExecutionStatus,
  CronStore,
  DueScheduleState,
  LatestSchedulePipeline,
  LostOccurrence,
  ManualOccurrencePlan,
  ManualOccurrenceRequest,
  ManualOccurrenceResult,
  NewCronExecution,
  OccurrenceStats,
  OverlapPolicy,
  RecoveryCounts,
  RecoveryOutcome,
  ReleaseBufferedRequest,
  ScheduleDst,
  ScheduleFilter,
  SchedulePlan,
  ScheduleRow,
  ScheduleSyncWrites,
} from './cron-store.js';
export { MAX_RUNS_NOTE } from './cron-store.js';
export {
  ConfigurationError,
  ContextError,
  DatabaseError,
  ExecutionNotFoundError,
  IdempotencyConflictError,
  InvalidCronExpressionError,
  InvalidTimezoneError,
  isOrreryError,
  NonRetryableError,
  OrreryError,
  PipelineTimeoutError,
  ScheduleConflictError,
  ScheduleNotFoundError,
  ScheduleOverlapError,
  ValidationError,
  WorkflowNotFoundError,
  WorkflowValidationError,
} from './errors.js';
export type {
  ClaimedTask,
  ClaimTasksRequest,
  CreatePipelinesOptions,
  ExecutionStore,
  FinishAndClaimResult,
  FinishTaskRequest,
  FinishTaskResult,
  LeaseRef,
  NewPipeline,
  PipelineFilter,
  PipelineRow,
  RegisteredTasks,
  RenewLeasesOptions,
  RetriedTask,
  StoredAttempt,
  TaskOutcome,
  TaskRow,
} from './execution-store.js';
export type {
  AttemptOutcome,
  ExecuteOptions,
  ListExecutionsFilter,
  PipelineExecution,
  PipelineExecutor,
  PipelineResult,
  PipelineStatus,
  PipelineSummary,
  TaskAttempt,
  TaskResult,
  TaskStatus,
} from './executor.js';
export { deepMerge, isJsonObject, type Json, type JsonObject, jsonByteLength, toJson } from './json.js';
export { type Logger, silentLogger } from './logger.js';
export {
  BackgroundLoop,
  emitSafely,
  type FailingLoop,
  failingLoops,
  type LoopOptions,
  MAX_TIMER_MS,
  setLongTimeout,
  sleep,
} from './loop.js';
export { checkPage, MAX_PAGE_VALUE, type Page, type PageInput, type PageLimits } from './paging.js';
export { RETRY_DEFAULTS, type RetryPolicy, retryDelayMs, shouldRetry } from './retry.js';
export type { RunnerRow, RunnerStore } from './runner-store.js';
export {
  type DatabaseLocation,
  MAX_SCHEMA_NAME_LENGTH,
  type OpenStorageOptions,
  parseDatabaseUrl,
  type Storage,
  validateSchemaName,
  WAKE_UP_CHANNEL_PREFIX,
  type WakeUp,
  type WakeUps,
} from './storage.js';
export {
  ACTIVE_PIPELINE_STATUSES,
  assertKeysHeldBySameWorkflow,
  claimsNothing,
  FIRE_LAG_SOURCES,
  idempotencyConflictError,
  inKeyLockOrder,
  leaseOfTask,
  newCronExecutionRow,
  newTaskStatus,
  OPEN_OCCURRENCE_STATUSES,
  RECLAIMABLE_OCCURRENCE_STATUSES,
  RETRYABLE_PIPELINE_STATUSES,
  registeredTaskKeys,
  SCHEDULER_OCCURRENCE_SOURCES,
  TASK_KEY_SEPARATOR,
  type TaskOutcomeColumns,
  TERMINAL_PIPELINE_STATUSES,
  TERMINAL_TASK_STATUSES,
  taskOutcomeColumns,
  UNFINISHED_PIPELINE_STATUSES,
} from './store-rules.js';
export {
  assertNoNul,
  checkIdempotencyKey,
  hasNul,
  MAX_IDEMPOTENCY_KEY_BYTES,
  NUL_REPLACEMENT,
  replaceNul,
} from './text.js';
export {
  assertStorableDate,
  MAX_STORABLE_DATE,
  MIN_STORABLE_DATE,
  truncateToMillis,
  UniversalTimestamp,
} from './timestamp.js';
export { isTriggerMet, type TerminalTaskStatus } from './trigger.js';
export { newId, occurrenceId, UniversalUuid, uuidPrefixRange } from './uuid.js';
export {
  defineWorkflow,
  type TaskDefinition,
  type TaskRunInfo,
  type TriggerRule,
  type Workflow,
  type WorkflowDefinition,
} from './workflow.js';
export {
  type WorkflowDefinitionRow,
  type WorkflowInfo,
  type WorkflowStore,
  type WorkflowTaskInfo,
  workflowDefinitionRow,
} from './workflow-store.js';
