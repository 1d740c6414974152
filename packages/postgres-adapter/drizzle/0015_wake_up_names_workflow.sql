-- A task wake-up names the workflow of its tasks: 'task:<ms>:<workflow name>' (the name is the
-- rest of the payload, colons included). A runner ignores wake-ups for workflows it does not
-- run: it used to claim for each (finding nothing), and its claim loop now takes a claim that
-- finds nothing after a wake-up as a race another runner won, and leaves the next wake-ups to
-- the others for a moment. Left out, the payload is 'task:<ms>' as before (every runner
-- claims): when one statement inserts ready tasks of several workflows, or a name is longer
-- than 1,000 bytes (pg_notify refuses a payload of 8,000 bytes or more, and would fail the
-- insert). Listeners of earlier versions read the first two fields and ignore the rest.
-- Both functions are 0002's and 0014's with the payload's tail added (each names no other
-- function: a trigger runs with the writer's search_path, not the tenant schema).
CREATE OR REPLACE FUNCTION orrery_wake_up() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'pipeline_executions' THEN
    PERFORM pg_notify('orrery.' || TG_TABLE_SCHEMA, 'pipeline:' || NEW.status || ':' || NEW.id::text);
  ELSIF TG_TABLE_NAME = 'cron_schedules' THEN
    PERFORM pg_notify('orrery.' || TG_TABLE_SCHEMA,
      'schedule:' || (extract(epoch FROM NEW.next_run_at) * 1000)::bigint::text);
  ELSE
    PERFORM pg_notify('orrery.' || TG_TABLE_SCHEMA,
      'task:' || (extract(epoch FROM NEW.available_at) * 1000)::bigint::text
        || CASE WHEN octet_length(NEW.workflow_name) <= 1000 THEN ':' || NEW.workflow_name ELSE '' END);
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION orrery_wake_up_tasks_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ready_at timestamptz;
  first_name text;
  last_name text;
BEGIN
  SELECT max(available_at), min(workflow_name), max(workflow_name) INTO ready_at, first_name, last_name
    FROM inserted_tasks WHERE status = 'ready' AND available_at <= updated_at;
  IF ready_at IS NOT NULL THEN
    -- Named only when every ready task inserted is of one workflow (and the name is short).
    PERFORM pg_notify('orrery.' || TG_TABLE_SCHEMA,
      'task:' || (extract(epoch FROM ready_at) * 1000)::bigint::text
        || CASE WHEN first_name = last_name AND octet_length(first_name) <= 1000 THEN ':' || first_name ELSE '' END);
  END IF;
  RETURN NULL;
END;
$$;
