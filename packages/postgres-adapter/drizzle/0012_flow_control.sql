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
DROP INDEX "task_executions_claim_idx";--> statement-breakpoint
ALTER TABLE "pipeline_executions" ADD COLUMN "run_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "pipeline_executions" ADD COLUMN "priority" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "pipeline_executions" ADD COLUMN "concurrency" jsonb;--> statement-breakpoint
ALTER TABLE "task_executions" ADD COLUMN "priority" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "concurrency" jsonb;--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "priority" integer;--> statement-breakpoint
ALTER TABLE "concurrency_slots" ADD CONSTRAINT "concurrency_slots_pipeline_execution_id_pipeline_executions_id_fk" FOREIGN KEY ("pipeline_execution_id") REFERENCES "public"."pipeline_executions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "concurrency_slots_queue_idx" ON "concurrency_slots" USING btree ("group_name","priority" DESC NULLS LAST,"queued_at","pipeline_execution_id") WHERE NOT admitted;--> statement-breakpoint
CREATE INDEX "concurrency_slots_pipeline_idx" ON "concurrency_slots" USING btree ("pipeline_execution_id");--> statement-breakpoint
CREATE INDEX "task_executions_priority_claim_idx" ON "task_executions" USING btree ("priority" DESC NULLS LAST,"available_at") WHERE coalesce(status = 'ready', false) AND priority <> 0;--> statement-breakpoint
CREATE INDEX "task_executions_claim_idx" ON "task_executions" USING btree ("available_at") WHERE coalesce(status = 'ready', false) AND priority = 0;