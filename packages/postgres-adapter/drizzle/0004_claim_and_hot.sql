DROP INDEX "pipeline_executions_status_created_at_idx";--> statement-breakpoint
DROP INDEX "task_executions_claim_idx";--> statement-breakpoint
CREATE INDEX "task_executions_claim_idx" ON "task_executions" USING btree ("available_at") WHERE coalesce(status = 'ready', false);