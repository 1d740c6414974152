CREATE TABLE "concurrency_slots" (
	"group_name" text NOT NULL,
	"pipeline_execution_id" uuid NOT NULL,
	"slot_limit" integer NOT NULL,
	"priority" integer NOT NULL,
	"queued_at" timestamp (3) with time zone NOT NULL,
	"admitted" boolean NOT NULL,
	CONSTRAINT "concurrency_slots_pkey" PRIMARY KEY("group_name","pipeline_execution_id")
);
--> statement-breakpoint
CREATE TABLE "rate_limit_buckets" (
	"bucket" text PRIMARY KEY NOT NULL,
	"herd_at" timestamp (3) with time zone NOT NULL,
	"herd_size" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rate_limit_starts" (
	"bucket" text NOT NULL,
	"started_at" timestamp (3) with time zone NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "signals" (
	"pipeline_execution_id" uuid NOT NULL,
	"name" text NOT NULL,
	"payload" jsonb NOT NULL,
	"received_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "signals_pkey" PRIMARY KEY("pipeline_execution_id","name")
);
--> statement-breakpoint
DROP INDEX "task_executions_claim_idx";--> statement-breakpoint
ALTER TABLE "pipeline_executions" ADD COLUMN "run_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "pipeline_executions" ADD COLUMN "priority" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "pipeline_executions" ADD COLUMN "concurrency" jsonb;--> statement-breakpoint
ALTER TABLE "task_executions" ADD COLUMN "wait_signal" text;--> statement-breakpoint
ALTER TABLE "task_executions" ADD COLUMN "waits_until" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "task_executions" ADD COLUMN "delay_ms" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "task_executions" ADD COLUMN "priority" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "concurrency" jsonb;--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "priority" integer;--> statement-breakpoint
ALTER TABLE "concurrency_slots" ADD CONSTRAINT "concurrency_slots_pipeline_execution_id_pipeline_executions_id_fk" FOREIGN KEY ("pipeline_execution_id") REFERENCES "public"."pipeline_executions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "signals" ADD CONSTRAINT "signals_pipeline_execution_id_pipeline_executions_id_fk" FOREIGN KEY ("pipeline_execution_id") REFERENCES "public"."pipeline_executions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "concurrency_slots_queue_idx" ON "concurrency_slots" USING btree ("group_name","priority" DESC NULLS LAST,"queued_at","pipeline_execution_id") WHERE NOT admitted;--> statement-breakpoint
CREATE INDEX "concurrency_slots_pipeline_idx" ON "concurrency_slots" USING btree ("pipeline_execution_id");--> statement-breakpoint
CREATE INDEX "concurrency_slots_active_idx" ON "concurrency_slots" USING btree ("group_name") WHERE admitted;--> statement-breakpoint
CREATE INDEX "rate_limit_starts_bucket_idx" ON "rate_limit_starts" USING btree ("bucket","started_at");--> statement-breakpoint
CREATE INDEX "task_executions_priority_claim_idx" ON "task_executions" USING btree ("priority" DESC NULLS LAST,"available_at") WHERE coalesce(status = 'ready' AND priority <> 0, false);--> statement-breakpoint
CREATE INDEX "task_executions_claim_idx" ON "task_executions" USING btree ("available_at") WHERE coalesce(status = 'ready' AND priority = 0, false);--> statement-breakpoint
-- A ready task made claimable sooner (a signal waking its wait task) tells the other processes,
-- as a task readied does (0002): they claim it without waiting for their next poll.
CREATE TRIGGER orrery_wake_up_task_woken AFTER UPDATE OF available_at ON task_executions FOR EACH ROW
  WHEN (NEW.status = 'ready' AND OLD.status = 'ready' AND NEW.available_at < OLD.available_at
    AND NEW.available_at <= NEW.updated_at)
  EXECUTE FUNCTION orrery_wake_up();
