ALTER TABLE "cron_schedules" ADD COLUMN "pause_on_failure" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "cron_schedules" ADD COLUMN "max_runs" integer;--> statement-breakpoint
ALTER TABLE "cron_schedules" ADD COLUMN "run_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "cron_schedules" ADD COLUMN "dst" jsonb;--> statement-breakpoint
ALTER TABLE "cron_schedules" ADD COLUMN "note" text;--> statement-breakpoint
ALTER TABLE "pipeline_executions" ADD COLUMN "schedule_id" uuid;--> statement-breakpoint
CREATE INDEX "cron_executions_buffered_idx" ON "cron_executions" USING btree ("schedule_id","scheduled_time") WHERE status = 'buffered';--> statement-breakpoint
CREATE INDEX "pipeline_executions_schedule_id_created_at_idx" ON "pipeline_executions" USING btree ("schedule_id","created_at") WHERE schedule_id IS NOT NULL;