import type {
  CatchupPolicy,
  ConcurrencyRule,
  ContextDelta,
  CronExecutionSource,
  CronExecutionStatus,
  Json,
  JsonObject,
  MapItem,
  OverlapPolicy,
  PipelineGroup,
  PipelineStatus,
  ScheduleDst,
  StoredAttempt,
  TaskStatus,
  WorkflowTaskInfo,
} from '@orreryjs/core';
import { sql } from 'drizzle-orm';
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { bool, json, timestamp, uuid } from './codec.js';

/*
 * Every table, index and constraint of the SQLite dialect. drizzle-kit generates ./drizzle
 * from this file. Partial-index conditions are written with bare column names and literals:
 * SQLite uses a partial index only when the query repeats the condition with the same
 * literal, so the stores spell their filters the same way.
 */

/** One row per pipeline execution. */
export const pipelineExecutions = sqliteTable(
  'pipeline_executions',
  {
    id: uuid('id').primaryKey(),
    workflowName: text('workflow_name').notNull(),
    workflowVersion: text('workflow_version').notNull(),
    status: text('status').$type<PipelineStatus>().notNull(),
    input: json<JsonObject>('input').notNull(),
    idempotencyKey: text('idempotency_key'),
    scheduledTime: timestamp('scheduled_time'),
    scheduleId: uuid('schedule_id'),
    remainingTasks: integer('remaining_tasks').notNull(),
    failedTasks: integer('failed_tasks').notNull(),
    error: text('error'),
    pauseReason: text('pause_reason'),
    /** The W3C trace context (`traceparent`, `tracestate`) of the span that started it, else null. */
    traceContext: json<Record<string, string>>('trace_context'),
    /** Its delayed start (ExecuteOptions.runAt), else null. */
    runAt: timestamp('run_at'),
    /** Higher is claimed first; copied to its tasks, where the claim orders by it. */
    priority: integer('priority').notNull().default(0),
    /** Its concurrency groups (PipelineGroup[]); null for a workflow without rules. */
    concurrency: json<PipelineGroup[]>('concurrency'),
    createdAt: timestamp('created_at').notNull(),
    startedAt: timestamp('started_at'),
    completedAt: timestamp('completed_at'),
    updatedAt: timestamp('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('pipeline_executions_idempotency_key_key').on(t.idempotencyKey).where(sql`idempotency_key IS NOT NULL`),
    index('pipeline_executions_created_at_idx').on(t.createdAt),
    index('pipeline_executions_status_created_at_idx').on(t.status, t.createdAt),
    index('pipeline_executions_workflow_name_created_at_idx').on(t.workflowName, t.createdAt),
    index('pipeline_executions_schedule_id_created_at_idx')
      .on(t.scheduleId, t.createdAt)
      .where(sql`schedule_id IS NOT NULL`),
  ],
);

/** One row per task of a pipeline execution; deleted with its pipeline. */
export const taskExecutions = sqliteTable(
  'task_executions',
  {
    id: uuid('id').primaryKey(),
    pipelineExecutionId: uuid('pipeline_execution_id')
      .notNull()
      .references(() => pipelineExecutions.id, { onDelete: 'cascade' }),
    workflowName: text('workflow_name').notNull(),
    taskId: text('task_id').notNull(),
    position: integer('position').notNull(),
    status: text('status').$type<TaskStatus>().notNull(),
    attempt: integer('attempt').notNull(),
    failedAttempts: integer('failed_attempts').notNull(),
    pendingDeps: integer('pending_deps').notNull(),
    availableAt: timestamp('available_at').notNull(),
    /** A wait task's signal name (its task's `waitFor.signal`): what a signal wakes; null for a task with code. */
    waitSignal: text('wait_signal'),
    /** When a wait task's signal times out, set when it first waits; null before, and for other tasks. */
    waitsUntil: timestamp('waits_until'),
    /** An instance of a map task: that task's id (see core's map.ts); null for a task. */
    mapOf: text('map_of'),
    /** An instance of a map task: its item's position in the list, from 0. */
    mapIndex: integer('map_index'),
    /** An instance of a map task: its item, as the task's map returned it (wrapped, see MapItem). */
    mapItem: json<MapItem>('map_item'),
    /** Its task's `delayMs`: readied, it becomes claimable this long after (0 for none). */
    delayMs: integer('delay_ms').notNull().default(0),
    /** The pipeline's priority, here so that the claim's index walk can order by it. */
    priority: integer('priority').notNull().default(0),
    leaseOwner: text('lease_owner'),
    leaseExpiresAt: timestamp('lease_expires_at'),
    /** The runner that claimed the latest attempt, kept when the lease ends: who ran a completed attempt. */
    runnerId: text('runner_id'),
    /** The attempts that did not complete (see StoredAttempt), appended by the statements that end them. */
    attemptHistory: json<StoredAttempt[]>('attempt_history'),
    output: json<ContextDelta>('output'),
    error: text('error'),
    startedAt: timestamp('started_at'),
    completedAt: timestamp('completed_at'),
    updatedAt: timestamp('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('task_executions_pipeline_task_key').on(t.pipelineExecutionId, t.taskId),
    // Two walks make the claim (see execution-store/claim.ts): the default priority by age alone, the
    // others by priority then age. One index on (priority, age) would have to step over every ready task
    // of a priority whose time has not come (retries backing off, delayed starts) on each claim.
    index('task_executions_claim_idx').on(t.availableAt).where(sql`status = 'ready' AND priority = 0`),
    index('task_executions_priority_claim_idx')
      .on(sql`priority DESC`, t.availableAt)
      .where(sql`status = 'ready' AND priority <> 0`),
    index('task_executions_expired_lease_idx').on(t.leaseExpiresAt).where(sql`status = 'running'`),
  ],
);

/** Cron schedules; `version` is the compare-and-set token. */
export const cronSchedules = sqliteTable(
  'cron_schedules',
  {
    id: uuid('id').primaryKey(),
    name: text('name').unique('cron_schedules_name_key'),
    workflowName: text('workflow_name').notNull(),
    cronExpression: text('cron_expression').notNull(),
    timezone: text('timezone').notNull(),
    enabled: bool('enabled').notNull(),
    context: json<JsonObject>('context').notNull(),
    catchupPolicy: text('catchup_policy').$type<CatchupPolicy>().notNull(),
    overlapPolicy: text('overlap_policy').$type<OverlapPolicy>().notNull(),
    jitterMs: integer('jitter_ms').notNull(),
    pauseOnFailure: bool('pause_on_failure').notNull().default(false),
    // The default only fills the rows that predate the column; a later migration sets them to updated_at.
    enabledAt: timestamp('enabled_at').notNull().default(sql`0`),
    maxRuns: integer('max_runs'),
    runCount: integer('run_count').notNull().default(0),
    dst: json<ScheduleDst>('dst'),
    note: text('note'),
    startAt: timestamp('start_at'),
    endAt: timestamp('end_at'),
    nextRunAt: timestamp('next_run_at'),
    lastRunAt: timestamp('last_run_at'),
    version: integer('version').notNull(),
    createdAt: timestamp('created_at').notNull(),
    updatedAt: timestamp('updated_at').notNull(),
  },
  (t) => [index('cron_schedules_due_idx').on(t.nextRunAt).where(sql`enabled = 1`)],
);

/** The cron ledger: one row per occurrence. No foreign key, so deleting a schedule keeps its history. */
export const cronExecutions = sqliteTable(
  'cron_executions',
  {
    id: uuid('id').primaryKey(),
    scheduleId: uuid('schedule_id').notNull(),
    workflowName: text('workflow_name').notNull(),
    context: json<JsonObject>('context').notNull(),
    scheduledTime: timestamp('scheduled_time').notNull(),
    fireAt: timestamp('fire_at').notNull(),
    claimedAt: timestamp('claimed_at').notNull(),
    claimedBy: text('claimed_by').notNull(),
    status: text('status').$type<CronExecutionStatus>().notNull(),
    source: text('source').$type<CronExecutionSource>().notNull(),
    missedCount: integer('missed_count').notNull(),
    pipelineExecutionId: uuid('pipeline_execution_id'),
    handedOffAt: timestamp('handed_off_at'),
    recoveryAttempts: integer('recovery_attempts').notNull(),
    recovered: bool('recovered').notNull(),
    nextRecoveryAt: timestamp('next_recovery_at'),
    recoveryLeaseOwner: text('recovery_lease_owner'),
    recoveryLeaseExpiresAt: timestamp('recovery_lease_expires_at'),
    abandonReason: text('abandon_reason'),
  },
  (t) => [
    uniqueIndex('cron_executions_occurrence_key').on(t.scheduleId, t.scheduledTime).where(sql`source <> 'manual'`),
    index('cron_executions_recovery_idx').on(t.fireAt).where(sql`status = 'claimed'`),
    index('cron_executions_buffered_idx').on(t.scheduleId, t.scheduledTime).where(sql`status = 'buffered'`),
    index('cron_executions_schedule_time_idx').on(t.scheduleId, t.scheduledTime),
  ],
);

/** One row per runner process: liveness and what it can run. */
export const runners = sqliteTable('runners', {
  id: text('id').primaryKey(),
  hostname: text('hostname').notNull(),
  pid: integer('pid').notNull(),
  workflows: json<string[]>('workflows').notNull(),
  startedAt: timestamp('started_at').notNull(),
  heartbeatAt: timestamp('heartbeat_at').notNull(),
  stoppedAt: timestamp('stopped_at'),
});

/**
 * One row per registered (workflow name, version): the definition without code, so that a
 * process without the task code can start the workflow by name and schedule it.
 */
export const workflows = sqliteTable(
  'workflows',
  {
    name: text('name').notNull(),
    version: text('version').notNull(),
    description: text('description'),
    tasks: json<WorkflowTaskInfo[]>('tasks').notNull(),
    /** Its concurrency rules (defaults filled in); null when it has none. */
    concurrency: json<ConcurrencyRule[]>('concurrency'),
    /** The priority its definition names; null when it names none (0). */
    priority: integer('priority'),
    registeredAt: timestamp('registered_at').notNull(),
    lastSeenAt: timestamp('last_seen_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.name, t.version] })],
);
/**
 * One row per (concurrency group, pipeline in it): queued until admitted, then counted as
 * active until its pipeline is terminal. Rows of terminal pipelines are deleted by the next
 * admission in their group (and with their pipeline), so a group's count reads few rows.
 */
export const concurrencySlots = sqliteTable(
  'concurrency_slots',
  {
    groupName: text('group_name').notNull(),
    pipelineExecutionId: uuid('pipeline_execution_id')
      .notNull()
      .references(() => pipelineExecutions.id, { onDelete: 'cascade' }),
    /** The limit of the rule as the pipeline's version declares it. */
    slotLimit: integer('slot_limit').notNull(),
    priority: integer('priority').notNull(),
    /** Its place in the queue: the pipeline's runAt, else its creation; the retry's time after a retry. */
    queuedAt: timestamp('queued_at').notNull(),
    admitted: bool('admitted').notNull(),
  },
  (t) => [
    primaryKey({ name: 'concurrency_slots_pkey', columns: [t.groupName, t.pipelineExecutionId] }),
    index('concurrency_slots_queue_idx')
      .on(t.groupName, sql`priority DESC`, t.queuedAt, t.pipelineExecutionId)
      .where(sql`NOT admitted`),
    index('concurrency_slots_pipeline_idx').on(t.pipelineExecutionId),
    // A group's active pipelines, counted (and their ended ones forgotten) by every admission: a walk of
    // the active few, however long the group's queue.
    index('concurrency_slots_active_idx').on(t.groupName).where(sql`admitted`),
  ],
);

/**
 * The starts of rate-limited attempts, one row each, kept while some window may still count
 * them (`expires_at` = start + the period of the task that started): what a bucket's limit counts.
 */
export const rateLimitStarts = sqliteTable(
  'rate_limit_starts',
  {
    bucket: text('bucket').notNull(),
    startedAt: timestamp('started_at').notNull(),
    expiresAt: timestamp('expires_at').notNull(),
  },
  (t) => [index('rate_limit_starts_bucket_idx').on(t.bucket, t.startedAt)],
);

/**
 * Per bucket, the tasks given back to wait for the same instant of room (a herd): the next
 * one waits a period more for every `limit` of them, so that a backlog is not claimed again
 * whole at each instant of room.
 */
export const rateLimitBuckets = sqliteTable('rate_limit_buckets', {
  bucket: text('bucket').primaryKey(),
  herdAt: timestamp('herd_at').notNull(),
  herdSize: integer('herd_size').notNull(),
});

/** Signals, one per (execution, name): kept from arrival, early ones included, until the pipeline is deleted. */
export const signals = sqliteTable(
  'signals',
  {
    pipelineExecutionId: uuid('pipeline_execution_id')
      .notNull()
      .references(() => pipelineExecutions.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    // Wrapped in an object ({ value }): a payload may be any JSON value, a string or null included.
    payload: json<{ value: Json | null }>('payload').notNull(),
    receivedAt: timestamp('received_at').notNull(),
  },
  (t) => [primaryKey({ name: 'signals_pkey', columns: [t.pipelineExecutionId, t.name] })],
);

/** Every table of the SQLite dialect, as the stores receive them. */
export const tables = {
  pipelineExecutions,
  taskExecutions,
  cronSchedules,
  cronExecutions,
  runners,
  workflows,
  concurrencySlots,
  rateLimitStarts,
  rateLimitBuckets,
  signals,
};

/** {@link tables}, as the stores receive them. */
export type SqliteTables = typeof tables;
