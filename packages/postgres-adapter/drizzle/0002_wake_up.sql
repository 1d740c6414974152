-- Wake-up across processes (LISTEN/NOTIFY). Row triggers NOTIFY in the transaction that makes
-- work ready, so the notification is delivered on commit and never for work rolled back. The
-- channel is 'orrery.' || the table's schema, so one migration set serves every tenant schema
-- and each schema has its own channel. The WHEN clauses are evaluated without calling the
-- function: the claim path (ready -> running, pending -> running) and the cron tick's own
-- advance of next_run_at never call it. Identical payloads in one transaction are delivered
-- once, so a batch of ready tasks is one wake-up. Payloads:
--   'task:<available_at ms>'      a task became ready to run now (the writer's now: a listener
--                                 whose clock is a little behind claims it when it gets there)
--   'pipeline:<status>:<id>'      a pipeline became terminal or paused, or was resumed
--   'schedule:<next_run_at ms>'   a schedule was added, enabled or made due sooner
CREATE OR REPLACE FUNCTION orrery_wake_up() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'pipeline_executions' THEN
    PERFORM pg_notify('orrery.' || TG_TABLE_SCHEMA, 'pipeline:' || NEW.status || ':' || NEW.id::text);
  ELSIF TG_TABLE_NAME = 'cron_schedules' THEN
    PERFORM pg_notify('orrery.' || TG_TABLE_SCHEMA,
      'schedule:' || (extract(epoch FROM NEW.next_run_at) * 1000)::bigint::text);
  ELSE
    PERFORM pg_notify('orrery.' || TG_TABLE_SCHEMA,
      'task:' || (extract(epoch FROM NEW.available_at) * 1000)::bigint::text);
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER orrery_wake_up_task_inserted AFTER INSERT ON task_executions FOR EACH ROW
  WHEN (NEW.status = 'ready' AND NEW.available_at <= NEW.updated_at)
  EXECUTE FUNCTION orrery_wake_up();
--> statement-breakpoint
CREATE TRIGGER orrery_wake_up_task_readied AFTER UPDATE OF status ON task_executions FOR EACH ROW
  WHEN (NEW.status = 'ready' AND OLD.status <> 'ready' AND NEW.available_at <= NEW.updated_at)
  EXECUTE FUNCTION orrery_wake_up();
--> statement-breakpoint
CREATE TRIGGER orrery_wake_up_pipeline_changed AFTER UPDATE OF status ON pipeline_executions FOR EACH ROW
  WHEN (NEW.status <> OLD.status
    AND (NEW.status IN ('completed', 'failed', 'cancelled', 'paused') OR OLD.status = 'paused'))
  EXECUTE FUNCTION orrery_wake_up();
--> statement-breakpoint
CREATE TRIGGER orrery_wake_up_schedule_added AFTER INSERT ON cron_schedules FOR EACH ROW
  WHEN (NEW.enabled AND NEW.next_run_at IS NOT NULL)
  EXECUTE FUNCTION orrery_wake_up();
--> statement-breakpoint
CREATE TRIGGER orrery_wake_up_schedule_changed AFTER UPDATE ON cron_schedules FOR EACH ROW
  WHEN (NEW.enabled AND NEW.next_run_at IS NOT NULL
    AND (NOT OLD.enabled OR OLD.next_run_at IS NULL OR NEW.next_run_at < OLD.next_run_at))
  EXECUTE FUNCTION orrery_wake_up();
