ALTER TABLE `task_executions` ADD `runner_id` text;--> statement-breakpoint
ALTER TABLE `task_executions` ADD `attempt_history` text;