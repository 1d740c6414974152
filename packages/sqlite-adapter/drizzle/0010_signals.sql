CREATE TABLE `signals` (
	`pipeline_execution_id` blob NOT NULL,
	`name` text NOT NULL,
	`payload` text NOT NULL,
	`received_at` integer NOT NULL,
	PRIMARY KEY(`pipeline_execution_id`, `name`),
	FOREIGN KEY (`pipeline_execution_id`) REFERENCES `pipeline_executions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `task_executions` ADD `wait_signal` text;--> statement-breakpoint
ALTER TABLE `task_executions` ADD `waits_until` integer;