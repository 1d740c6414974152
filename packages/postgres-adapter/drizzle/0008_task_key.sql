-- A task row is keyed by (pipeline, task id): its unique index becomes the primary key and the
-- index on `id` goes, so each non-HOT update of a task (claim, finish) writes one index entry fewer.
ALTER TABLE "task_executions" DROP CONSTRAINT "task_executions_pkey";--> statement-breakpoint
ALTER TABLE "task_executions" ADD CONSTRAINT "task_executions_pkey" PRIMARY KEY USING INDEX "task_executions_pipeline_task_key";
