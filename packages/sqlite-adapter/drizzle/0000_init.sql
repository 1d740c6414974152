CREATE TABLE `cron_executions` (
	`id` blob PRIMARY KEY NOT NULL,
	`schedule_id` blob NOT NULL,
	`workflow_name` text NOT NULL,
	`context` text NOT NULL,
	`scheduled_time` integer NOT NULL,
	`fire_at` integer NOT NULL,
	`claimed_at` integer NOT NULL,
	`claimed_by` text NOT NULL,
	`status` text NOT NULL,
	`source` text NOT NULL,
	`missed_count` integer NOT NULL,
	`pipeline_execution_id` blob,
	`handed_off_at` integer,
	`recovery_attempts` integer NOT NULL,
	`recovered` integer NOT NULL,
	`next_recovery_at` integer,
	`recovery_lease_owner` text,
	`recovery_lease_expires_at` integer,
	`abandon_reason` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `cron_executions_occurrence_key` ON `cron_executions` (`schedule_id`,`scheduled_time`) WHERE source <> 'manual';--> statement-breakpoint
CREATE INDEX `cron_executions_recovery_idx` ON `cron_executions` (`fire_at`) WHERE status = 'claimed';--> statement-breakpoint
CREATE INDEX `cron_executions_schedule_time_idx` ON `cron_executions` (`schedule_id`,`scheduled_time`);--> statement-breakpoint
CREATE TABLE `cron_schedules` (
	`id` blob PRIMARY KEY NOT NULL,
	`name` text,
	`workflow_name` text NOT NULL,
	`cron_expression` text NOT NULL,
	`timezone` text NOT NULL,
	`enabled` integer NOT NULL,
	`context` text NOT NULL,
	`catchup_policy` text NOT NULL,
	`overlap_policy` text NOT NULL,
	`jitter_ms` integer NOT NULL,
	`start_at` integer,
	`end_at` integer,
	`next_run_at` integer,
	`last_run_at` integer,
	`version` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `cron_schedules_name_key` ON `cron_schedules` (`name`);--> statement-breakpoint
CREATE INDEX `cron_schedules_due_idx` ON `cron_schedules` (`next_run_at`) WHERE enabled = 1;--> statement-breakpoint
CREATE TABLE `pipeline_executions` (
	`id` blob PRIMARY KEY NOT NULL,
	`workflow_name` text NOT NULL,
	`workflow_version` text NOT NULL,
	`status` text NOT NULL,
	`input` text NOT NULL,
	`idempotency_key` text,
	`scheduled_time` integer,
	`remaining_tasks` integer NOT NULL,
	`failed_tasks` integer NOT NULL,
	`error` text,
	`pause_reason` text,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`completed_at` integer,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `pipeline_executions_idempotency_key_key` ON `pipeline_executions` (`idempotency_key`) WHERE idempotency_key IS NOT NULL;--> statement-breakpoint
CREATE INDEX `pipeline_executions_created_at_idx` ON `pipeline_executions` (`created_at`);--> statement-breakpoint
CREATE INDEX `pipeline_executions_status_created_at_idx` ON `pipeline_executions` (`status`,`created_at`);--> statement-breakpoint
CREATE INDEX `pipeline_executions_workflow_name_created_at_idx` ON `pipeline_executions` (`workflow_name`,`created_at`);--> statement-breakpoint
CREATE TABLE `runners` (
	`id` text PRIMARY KEY NOT NULL,
	`hostname` text NOT NULL,
	`pid` integer NOT NULL,
	`workflows` text NOT NULL,
	`started_at` integer NOT NULL,
	`heartbeat_at` integer NOT NULL,
	`stopped_at` integer
);
--> statement-breakpoint
CREATE TABLE `task_executions` (
	`id` blob PRIMARY KEY NOT NULL,
	`pipeline_execution_id` blob NOT NULL,
	`workflow_name` text NOT NULL,
	`task_id` text NOT NULL,
	`position` integer NOT NULL,
	`status` text NOT NULL,
	`attempt` integer NOT NULL,
	`failed_attempts` integer NOT NULL,
	`pending_deps` integer NOT NULL,
	`available_at` integer NOT NULL,
	`lease_owner` text,
	`lease_expires_at` integer,
	`output` text,
	`error` text,
	`started_at` integer,
	`completed_at` integer,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`pipeline_execution_id`) REFERENCES `pipeline_executions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `task_executions_pipeline_task_key` ON `task_executions` (`pipeline_execution_id`,`task_id`);--> statement-breakpoint
CREATE INDEX `task_executions_claim_idx` ON `task_executions` (`available_at`) WHERE status = 'ready';--> statement-breakpoint
CREATE INDEX `task_executions_expired_lease_idx` ON `task_executions` (`lease_expires_at`) WHERE status = 'running';