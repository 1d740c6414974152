ALTER TABLE `cron_schedules` ADD `pause_on_failure` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `cron_schedules` ADD `max_runs` integer;--> statement-breakpoint
ALTER TABLE `cron_schedules` ADD `run_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `cron_schedules` ADD `dst` text;--> statement-breakpoint
ALTER TABLE `cron_schedules` ADD `note` text;--> statement-breakpoint
ALTER TABLE `pipeline_executions` ADD `schedule_id` blob;--> statement-breakpoint
CREATE INDEX `pipeline_executions_schedule_id_created_at_idx` ON `pipeline_executions` (`schedule_id`,`created_at`) WHERE schedule_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX `cron_executions_buffered_idx` ON `cron_executions` (`schedule_id`,`scheduled_time`) WHERE status = 'buffered';