CREATE TABLE `concurrency_slots` (
	`group_name` text NOT NULL,
	`pipeline_execution_id` blob NOT NULL,
	`slot_limit` integer NOT NULL,
	`priority` integer NOT NULL,
	`queued_at` integer NOT NULL,
	`admitted` integer NOT NULL,
	PRIMARY KEY(`group_name`, `pipeline_execution_id`),
	FOREIGN KEY (`pipeline_execution_id`) REFERENCES `pipeline_executions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `concurrency_slots_queue_idx` ON `concurrency_slots` (`group_name`,priority DESC,`queued_at`,`pipeline_execution_id`) WHERE NOT admitted;--> statement-breakpoint
CREATE INDEX `concurrency_slots_pipeline_idx` ON `concurrency_slots` (`pipeline_execution_id`);--> statement-breakpoint
CREATE INDEX `concurrency_slots_active_idx` ON `concurrency_slots` (`group_name`) WHERE admitted;--> statement-breakpoint
CREATE TABLE `rate_limit_buckets` (
	`bucket` text PRIMARY KEY NOT NULL,
	`herd_at` integer NOT NULL,
	`herd_size` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `rate_limit_starts` (
	`bucket` text NOT NULL,
	`started_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `rate_limit_starts_bucket_idx` ON `rate_limit_starts` (`bucket`,`started_at`);--> statement-breakpoint
CREATE TABLE `signals` (
	`pipeline_execution_id` blob NOT NULL,
	`name` text NOT NULL,
	`payload` text NOT NULL,
	`received_at` integer NOT NULL,
	PRIMARY KEY(`pipeline_execution_id`, `name`),
	FOREIGN KEY (`pipeline_execution_id`) REFERENCES `pipeline_executions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
DROP INDEX `task_executions_claim_idx`;--> statement-breakpoint
ALTER TABLE `task_executions` ADD `wait_signal` text;--> statement-breakpoint
ALTER TABLE `task_executions` ADD `waits_until` integer;--> statement-breakpoint
ALTER TABLE `task_executions` ADD `delay_ms` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `task_executions` ADD `priority` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `task_executions_priority_claim_idx` ON `task_executions` (priority DESC,`available_at`) WHERE status = 'ready' AND priority <> 0;--> statement-breakpoint
CREATE INDEX `task_executions_claim_idx` ON `task_executions` (`available_at`) WHERE status = 'ready' AND priority = 0;--> statement-breakpoint
ALTER TABLE `pipeline_executions` ADD `run_at` integer;--> statement-breakpoint
ALTER TABLE `pipeline_executions` ADD `priority` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `pipeline_executions` ADD `concurrency` text;--> statement-breakpoint
ALTER TABLE `workflows` ADD `concurrency` text;--> statement-breakpoint
ALTER TABLE `workflows` ADD `priority` integer;