CREATE TABLE "signals" (
	"pipeline_execution_id" uuid NOT NULL,
	"name" text NOT NULL,
	"payload" jsonb NOT NULL,
	"received_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "signals_pkey" PRIMARY KEY("pipeline_execution_id","name")
);
--> statement-breakpoint
ALTER TABLE "task_executions" ADD COLUMN "wait_signal" text;--> statement-breakpoint
ALTER TABLE "task_executions" ADD COLUMN "waits_until" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "signals" ADD CONSTRAINT "signals_pipeline_execution_id_pipeline_executions_id_fk" FOREIGN KEY ("pipeline_execution_id") REFERENCES "public"."pipeline_executions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- A ready task made claimable sooner (a signal waking its wait task) tells the other processes,
-- as a task readied does (0002): they claim it without waiting for their next poll.
CREATE TRIGGER orrery_wake_up_task_woken AFTER UPDATE OF available_at ON task_executions FOR EACH ROW
  WHEN (NEW.status = 'ready' AND OLD.status = 'ready' AND NEW.available_at < OLD.available_at
    AND NEW.available_at <= NEW.updated_at)
  EXECUTE FUNCTION orrery_wake_up();
