-- Ready tasks inserted wake listeners once per statement instead of once per row. The row
-- trigger of 0002 called orrery_wake_up for every ready task a statement inserted (500 calls for
-- a cron tick's 500 one-task pipelines: ~4 ms of the insert's ~12 ms); identical payloads were
-- then delivered once anyway. This statement trigger reads the inserted rows from a transition
-- table and sends one 'task:<ms>' for them, with the latest available_at among the ready ones,
-- so that a listener whose clock is a little behind the writer's claims when every one of them
-- is claimable by its clock (see 0002 for the payloads). Updates keep their row triggers:
-- PostgreSQL allows no transition table on a trigger with a column list (UPDATE OF status),
-- and one without would run on every claim and heartbeat.
CREATE OR REPLACE FUNCTION orrery_wake_up_tasks_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ready_at bigint;
BEGIN
  SELECT (extract(epoch FROM max(available_at)) * 1000)::bigint INTO ready_at
    FROM inserted_tasks WHERE status = 'ready' AND available_at <= updated_at;
  IF ready_at IS NOT NULL THEN
    PERFORM pg_notify('orrery.' || TG_TABLE_SCHEMA, 'task:' || ready_at::text);
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER orrery_wake_up_task_inserted ON task_executions;
--> statement-breakpoint
CREATE TRIGGER orrery_wake_up_tasks_inserted AFTER INSERT ON task_executions
  REFERENCING NEW TABLE AS inserted_tasks FOR EACH STATEMENT
  EXECUTE FUNCTION orrery_wake_up_tasks_inserted();
