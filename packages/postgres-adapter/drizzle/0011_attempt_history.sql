ALTER TABLE "task_executions" ADD COLUMN "runner_id" text;--> statement-breakpoint
ALTER TABLE "task_executions" ADD COLUMN "attempt_history" jsonb;