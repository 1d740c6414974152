CREATE TABLE "cron_executions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"schedule_id" uuid NOT NULL,
	"workflow_name" text NOT NULL,
	"context" jsonb NOT NULL,
	"scheduled_time" timestamp (3) with time zone NOT NULL,
	"fire_at" timestamp (3) with time zone NOT NULL,
	"claimed_at" timestamp (3) with time zone NOT NULL,
	"claimed_by" text NOT NULL,
	"status" text NOT NULL,
	"source" text NOT NULL,
	"missed_count" integer NOT NULL,
	"pipeline_execution_id" uuid,
	"handed_off_at" timestamp (3) with time zone,
	"recovery_attempts" integer NOT NULL,
	"recovered" boolean NOT NULL,
	"next_recovery_at" timestamp (3) with time zone,
	"recovery_lease_owner" text,
	"recovery_lease_expires_at" timestamp (3) with time zone,
	"abandon_reason" text
);
--> statement-breakpoint
CREATE TABLE "cron_schedules" (
	"id" uuid PRIMARY KEY NOT NULL,
	"name" text,
	"workflow_name" text NOT NULL,
	"cron_expression" text NOT NULL,
	"timezone" text NOT NULL,
	"enabled" boolean NOT NULL,
	"context" jsonb NOT NULL,
	"catchup_policy" text NOT NULL,
	"overlap_policy" text NOT NULL,
	"jitter_ms" integer NOT NULL,
	"start_at" timestamp (3) with time zone,
	"end_at" timestamp (3) with time zone,
	"next_run_at" timestamp (3) with time zone,
	"last_run_at" timestamp (3) with time zone,
	"version" integer NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "cron_schedules_name_key" UNIQUE("name")
);
--> statement-breakpoint
CREATE TABLE "pipeline_executions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workflow_name" text NOT NULL,
	"workflow_version" text NOT NULL,
	"status" text NOT NULL,
	"input" jsonb NOT NULL,
	"idempotency_key" text,
	"scheduled_time" timestamp (3) with time zone,
	"remaining_tasks" integer NOT NULL,
	"failed_tasks" integer NOT NULL,
	"error" text,
	"pause_reason" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	"started_at" timestamp (3) with time zone,
	"completed_at" timestamp (3) with time zone,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "runners" (
	"id" text PRIMARY KEY NOT NULL,
	"hostname" text NOT NULL,
	"pid" integer NOT NULL,
	"workflows" jsonb NOT NULL,
	"started_at" timestamp (3) with time zone NOT NULL,
	"heartbeat_at" timestamp (3) with time zone NOT NULL,
	"stopped_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "task_executions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"pipeline_execution_id" uuid NOT NULL,
	"workflow_name" text NOT NULL,
	"task_id" text NOT NULL,
	"position" integer NOT NULL,
	"status" text NOT NULL,
	"attempt" integer NOT NULL,
	"failed_attempts" integer NOT NULL,
	"pending_deps" integer NOT NULL,
	"available_at" timestamp (3) with time zone NOT NULL,
	"lease_owner" text,
	"lease_expires_at" timestamp (3) with time zone,
	"output" jsonb,
	"error" text,
	"started_at" timestamp (3) with time zone,
	"completed_at" timestamp (3) with time zone,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "task_executions" ADD CONSTRAINT "task_executions_pipeline_execution_id_pipeline_executions_id_fk" FOREIGN KEY ("pipeline_execution_id") REFERENCES "public"."pipeline_executions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "cron_executions_occurrence_key" ON "cron_executions" USING btree ("schedule_id","scheduled_time") WHERE source <> 'manual';--> statement-breakpoint
CREATE INDEX "cron_executions_recovery_idx" ON "cron_executions" USING btree ("fire_at") WHERE status = 'claimed';--> statement-breakpoint
CREATE INDEX "cron_executions_schedule_time_idx" ON "cron_executions" USING btree ("schedule_id","scheduled_time");--> statement-breakpoint
CREATE INDEX "cron_schedules_due_idx" ON "cron_schedules" USING btree ("next_run_at") WHERE enabled;--> statement-breakpoint
CREATE UNIQUE INDEX "pipeline_executions_idempotency_key_key" ON "pipeline_executions" USING btree ("idempotency_key") WHERE idempotency_key IS NOT NULL;--> statement-breakpoint
CREATE INDEX "pipeline_executions_created_at_idx" ON "pipeline_executions" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "pipeline_executions_status_created_at_idx" ON "pipeline_executions" USING btree ("status","created_at");--> statement-breakpoint
CREATE INDEX "pipeline_executions_workflow_name_created_at_idx" ON "pipeline_executions" USING btree ("workflow_name","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "task_executions_pipeline_task_key" ON "task_executions" USING btree ("pipeline_execution_id","task_id");--> statement-breakpoint
CREATE INDEX "task_executions_claim_idx" ON "task_executions" USING btree ("available_at") WHERE status = 'ready';--> statement-breakpoint
CREATE INDEX "task_executions_expired_lease_idx" ON "task_executions" USING btree ("lease_expires_at") WHERE status = 'running';