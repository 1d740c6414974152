-- pipelines/insertPipelines
WITH inserted AS (
      INSERT INTO "tenant"."pipeline_executions" (id, workflow_name, workflow_version, status, input, idempotency_key, scheduled_time,
        schedule_id, remaining_tasks, failed_tasks, created_at, updated_at, trace_context, run_at, priority, concurrency)
      SELECT u.id, u.workflow_name, u.workflow_version, 'pending', u.input::jsonb, u.idempotency_key,
        u.scheduled_time, u.schedule_id, u.remaining_tasks, 0, u.now, u.now, u.trace_context::jsonb, u.run_at, u.priority,
        u.concurrency::jsonb
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::uuid[],
        $8::int[], $9::timestamptz[], $16::text[], $17::timestamptz[], $18::int[], $19::text[])
        AS u(id, workflow_name, workflow_version, input, idempotency_key, scheduled_time, schedule_id, remaining_tasks, now,
          trace_context, run_at, priority, concurrency)
      ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
      RETURNING *
    ), tasks AS (
      INSERT INTO "tenant"."task_executions" (id, pipeline_execution_id, workflow_name, task_id, position, status, attempt,
        failed_attempts, pending_deps, available_at, delay_ms, wait_signal, priority, updated_at)
      SELECT v.id, i.id, i.workflow_name, v.task_id, v.position, v.status, 0, 0, v.pending_deps,
        coalesce(i.run_at, i.created_at) + v.delay_ms * interval '1 millisecond', v.delay_ms, v.wait_signal, i.priority,
        i.created_at
      FROM unnest($10::uuid[], $11::uuid[], $12::text[], $13::int[], $14::text[], $15::int[], $20::int[], $21::text[])
        AS v(id, pipeline_id, task_id, position, status, pending_deps, delay_ms, wait_signal)
      JOIN inserted i ON i.id = v.pipeline_id
    )
    SELECT to_json(i) AS row FROM inserted i;

-- pipelines/selectPipeline
select "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at"
  from "tenant"."pipeline_executions"
  where "tenant"."pipeline_executions"."id" = $1::uuid;

-- pipelines/selectPipelineByKey
select "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at"
  from "tenant"."pipeline_executions"
  where "tenant"."pipeline_executions"."idempotency_key" = $1::text;

-- pipelines/selectPipelineIdsByPrefix
select "id"
  from "tenant"."pipeline_executions"
  where ("tenant"."pipeline_executions"."id" >= $1::uuid and "tenant"."pipeline_executions"."id" <= $2::uuid)
  order by "tenant"."pipeline_executions"."id" asc
  limit $3;

-- pipelines/selectTasks
select "id", "pipeline_execution_id", "workflow_name", "task_id", "position", "status", "attempt", "failed_attempts", "pending_deps", "available_at", "waits_until", "map_of", "map_index", "map_item", "lease_owner", "lease_expires_at", "runner_id", "attempt_history", "output", "error", "started_at", "completed_at"
  from "tenant"."task_executions"
  where ("tenant"."task_executions"."pipeline_execution_id" = $1::uuid and "tenant"."task_executions"."map_of" is null)
  order by "tenant"."task_executions"."position" asc;

-- claim/claimTasks
with "ready" as (select "tenant"."task_executions"."pipeline_execution_id", "tenant"."task_executions"."task_id", "tenant"."task_executions"."status", "tenant"."task_executions"."available_at", "tenant"."task_executions"."priority", "tenant"."task_executions"."started_at", "tenant"."pipeline_executions"."id" as "p_id", "tenant"."pipeline_executions"."workflow_name" as "p_workflow_name", "tenant"."pipeline_executions"."workflow_version" as "p_workflow_version", "tenant"."pipeline_executions"."status" as "p_status", "tenant"."pipeline_executions"."input" as "p_input", "tenant"."pipeline_executions"."idempotency_key" as "p_idempotency_key", "tenant"."pipeline_executions"."scheduled_time" as "p_scheduled_time", "tenant"."pipeline_executions"."schedule_id" as "p_schedule_id", "tenant"."pipeline_executions"."remaining_tasks" as "p_remaining_tasks", "tenant"."pipeline_executions"."failed_tasks" as "p_failed_tasks", "tenant"."pipeline_executions"."error" as "p_error", "tenant"."pipeline_executions"."pause_reason" as "p_pause_reason", "tenant"."pipeline_executions"."trace_context" as "p_trace_context", "tenant"."pipeline_executions"."run_at" as "p_run_at", "tenant"."pipeline_executions"."priority" as "p_priority", "tenant"."pipeline_executions"."concurrency" as "p_concurrency", "tenant"."pipeline_executions"."created_at" as "p_created_at", "tenant"."pipeline_executions"."started_at" as "p_started_at", "tenant"."pipeline_executions"."completed_at" as "p_completed_at", "tenant"."pipeline_executions"."updated_at" as "p_updated_at"
  from "tenant"."task_executions"
  inner join "tenant"."pipeline_executions" on "tenant"."pipeline_executions"."id" = "tenant"."task_executions"."pipeline_execution_id"
  where ((coalesce("tenant"."task_executions"."status" = 'ready' AND "tenant"."task_executions"."priority" = 0, false) and "tenant"."task_executions"."available_at" <= $1::timestamp (3) with time zone) and coalesce("tenant"."pipeline_executions"."status" IN ('pending', 'running'), false) and coalesce("tenant"."task_executions"."workflow_name" || chr(31) || coalesce("tenant"."task_executions"."map_of", "tenant"."task_executions"."task_id") = ANY($2::text[]), false))
  order by "tenant"."task_executions"."available_at" asc
  limit $3
  for no key update of "task_executions", "pipeline_executions" skip locked), "ready_by_priority" as (select "tenant"."task_executions"."pipeline_execution_id", "tenant"."task_executions"."task_id", "tenant"."task_executions"."status", "tenant"."task_executions"."available_at", "tenant"."task_executions"."priority", "tenant"."task_executions"."started_at", "tenant"."pipeline_executions"."id" as "p_id", "tenant"."pipeline_executions"."workflow_name" as "p_workflow_name", "tenant"."pipeline_executions"."workflow_version" as "p_workflow_version", "tenant"."pipeline_executions"."status" as "p_status", "tenant"."pipeline_executions"."input" as "p_input", "tenant"."pipeline_executions"."idempotency_key" as "p_idempotency_key", "tenant"."pipeline_executions"."scheduled_time" as "p_scheduled_time", "tenant"."pipeline_executions"."schedule_id" as "p_schedule_id", "tenant"."pipeline_executions"."remaining_tasks" as "p_remaining_tasks", "tenant"."pipeline_executions"."failed_tasks" as "p_failed_tasks", "tenant"."pipeline_executions"."error" as "p_error", "tenant"."pipeline_executions"."pause_reason" as "p_pause_reason", "tenant"."pipeline_executions"."trace_context" as "p_trace_context", "tenant"."pipeline_executions"."run_at" as "p_run_at", "tenant"."pipeline_executions"."priority" as "p_priority", "tenant"."pipeline_executions"."concurrency" as "p_concurrency", "tenant"."pipeline_executions"."created_at" as "p_created_at", "tenant"."pipeline_executions"."started_at" as "p_started_at", "tenant"."pipeline_executions"."completed_at" as "p_completed_at", "tenant"."pipeline_executions"."updated_at" as "p_updated_at"
  from "tenant"."task_executions"
  inner join "tenant"."pipeline_executions" on "tenant"."pipeline_executions"."id" = "tenant"."task_executions"."pipeline_execution_id"
  where ((coalesce("tenant"."task_executions"."status" = 'ready' AND "tenant"."task_executions"."priority" <> 0, false) and "tenant"."task_executions"."available_at" <= $4::timestamp (3) with time zone) and coalesce("tenant"."pipeline_executions"."status" IN ('pending', 'running'), false) and coalesce("tenant"."task_executions"."workflow_name" || chr(31) || coalesce("tenant"."task_executions"."map_of", "tenant"."task_executions"."task_id") = ANY($5::text[]), false))
  order by "tenant"."task_executions"."priority" desc, "tenant"."task_executions"."available_at" asc
  limit $6
  for no key update of "task_executions", "pipeline_executions" skip locked), "expired" as (select "tenant"."task_executions"."pipeline_execution_id", "tenant"."task_executions"."task_id", "tenant"."task_executions"."status", "tenant"."task_executions"."available_at", "tenant"."task_executions"."priority", "tenant"."task_executions"."started_at", "tenant"."pipeline_executions"."id" as "p_id", "tenant"."pipeline_executions"."workflow_name" as "p_workflow_name", "tenant"."pipeline_executions"."workflow_version" as "p_workflow_version", "tenant"."pipeline_executions"."status" as "p_status", "tenant"."pipeline_executions"."input" as "p_input", "tenant"."pipeline_executions"."idempotency_key" as "p_idempotency_key", "tenant"."pipeline_executions"."scheduled_time" as "p_scheduled_time", "tenant"."pipeline_executions"."schedule_id" as "p_schedule_id", "tenant"."pipeline_executions"."remaining_tasks" as "p_remaining_tasks", "tenant"."pipeline_executions"."failed_tasks" as "p_failed_tasks", "tenant"."pipeline_executions"."error" as "p_error", "tenant"."pipeline_executions"."pause_reason" as "p_pause_reason", "tenant"."pipeline_executions"."trace_context" as "p_trace_context", "tenant"."pipeline_executions"."run_at" as "p_run_at", "tenant"."pipeline_executions"."priority" as "p_priority", "tenant"."pipeline_executions"."concurrency" as "p_concurrency", "tenant"."pipeline_executions"."created_at" as "p_created_at", "tenant"."pipeline_executions"."started_at" as "p_started_at", "tenant"."pipeline_executions"."completed_at" as "p_completed_at", "tenant"."pipeline_executions"."updated_at" as "p_updated_at"
  from "tenant"."task_executions"
  inner join "tenant"."pipeline_executions" on "tenant"."pipeline_executions"."id" = "tenant"."task_executions"."pipeline_execution_id"
  where (("tenant"."task_executions"."status" = 'running' and "tenant"."task_executions"."lease_expires_at" < $7::timestamp (3) with time zone) and coalesce("tenant"."pipeline_executions"."status" IN ('pending', 'running'), false) and coalesce("tenant"."task_executions"."workflow_name" || chr(31) || coalesce("tenant"."task_executions"."map_of", "tenant"."task_executions"."task_id") = ANY($8::text[]), false))
  order by "tenant"."task_executions"."priority" desc, "tenant"."task_executions"."available_at" asc
  limit $9
  for no key update of "task_executions", "pipeline_executions" skip locked), "candidates" as (((select "pipeline_execution_id", "task_id", "status", "available_at", "priority", "started_at", "p_id", "p_workflow_name", "p_workflow_version", "p_status", "p_input", "p_idempotency_key", "p_scheduled_time", "p_schedule_id", "p_remaining_tasks", "p_failed_tasks", "p_error", "p_pause_reason", "p_trace_context", "p_run_at", "p_priority", "p_concurrency", "p_created_at", "p_started_at", "p_completed_at", "p_updated_at"
  from "ready")
  union all (select "pipeline_execution_id", "task_id", "status", "available_at", "priority", "started_at", "p_id", "p_workflow_name", "p_workflow_version", "p_status", "p_input", "p_idempotency_key", "p_scheduled_time", "p_schedule_id", "p_remaining_tasks", "p_failed_tasks", "p_error", "p_pause_reason", "p_trace_context", "p_run_at", "p_priority", "p_concurrency", "p_created_at", "p_started_at", "p_completed_at", "p_updated_at"
  from "ready_by_priority"))
  union all (select "pipeline_execution_id", "task_id", "status", "available_at", "priority", "started_at", "p_id", "p_workflow_name", "p_workflow_version", "p_status", "p_input", "p_idempotency_key", "p_scheduled_time", "p_schedule_id", "p_remaining_tasks", "p_failed_tasks", "p_error", "p_pause_reason", "p_trace_context", "p_run_at", "p_priority", "p_concurrency", "p_created_at", "p_started_at", "p_completed_at", "p_updated_at"
  from "expired")
  order by priority DESC, available_at
  limit $10), "leased" as (update "tenant"."task_executions"
  set "status" = $11, "attempt" = "tenant"."task_executions"."attempt" + 1, "failed_attempts" = "tenant"."task_executions"."failed_attempts" + (CASE WHEN "candidates"."status" = 'running' AND "candidates"."started_at" IS NOT NULL THEN 1 ELSE 0 END), "lease_owner" = $12::text, "lease_expires_at" = $13::timestamp (3) with time zone, "runner_id" = $14::text, "attempt_history" = CASE WHEN "candidates"."status" = 'running' AND "candidates"."started_at" IS NOT NULL THEN coalesce("tenant"."task_executions"."attempt_history", '[]'::jsonb) || jsonb_build_array(jsonb_build_object('attempt', "tenant"."task_executions"."attempt",
    'runnerId', "tenant"."task_executions"."lease_owner", 'startedAt', (extract(epoch FROM (coalesce("tenant"."task_executions"."started_at", "tenant"."task_executions"."lease_expires_at"))::timestamptz) * 1000)::bigint,
    'endedAt', (extract(epoch FROM ("tenant"."task_executions"."lease_expires_at")::timestamptz) * 1000)::bigint, 'outcome', ('lease_expired')::text, 'error', ('lease expired (held by ' || coalesce("tenant"."task_executions"."lease_owner", 'nobody') || ')')::text)) ELSE "tenant"."task_executions"."attempt_history" END, "error" = CASE WHEN "candidates"."status" = 'running' AND "candidates"."started_at" IS NOT NULL THEN 'lease expired (held by ' || coalesce("tenant"."task_executions"."lease_owner", 'nobody') || ')' ELSE "tenant"."task_executions"."error" END, "started_at" = CASE WHEN $15::int >= $16::int THEN $17::timestamp (3) with time zone
          WHEN (SELECT count(*) FROM "candidates" AS earlier WHERE (-earlier.priority, earlier.available_at, earlier.pipeline_execution_id, earlier.task_id)
            < (-"candidates"."priority", "candidates"."available_at", "candidates"."pipeline_execution_id", "candidates"."task_id")) < $18::int THEN $19::timestamp (3) with time zone END, "updated_at" = $20::timestamp (3) with time zone
  from "candidates"
  where ("tenant"."task_executions"."pipeline_execution_id" = "candidates"."pipeline_execution_id" and "tenant"."task_executions"."task_id" = "candidates"."task_id")
  returning "tenant"."task_executions"."id", "tenant"."task_executions"."pipeline_execution_id", "tenant"."task_executions"."workflow_name", "tenant"."task_executions"."task_id", "tenant"."task_executions"."position", "tenant"."task_executions"."status", "tenant"."task_executions"."attempt", "tenant"."task_executions"."failed_attempts", "tenant"."task_executions"."pending_deps", "tenant"."task_executions"."available_at", "tenant"."task_executions"."waits_until", "tenant"."task_executions"."map_of", "tenant"."task_executions"."map_index", "tenant"."task_executions"."map_item", "tenant"."task_executions"."lease_owner", "tenant"."task_executions"."lease_expires_at", "tenant"."task_executions"."runner_id", "tenant"."task_executions"."attempt_history", "tenant"."task_executions"."output", "tenant"."task_executions"."error", "tenant"."task_executions"."started_at", "tenant"."task_executions"."completed_at", "tenant"."task_executions"."priority", "candidates"."status" = 'running' AND "candidates"."started_at" IS NOT NULL as "lease_expired", CASE WHEN "tenant"."task_executions"."wait_signal" IS NOT NULL THEN ((select "payload"
  from "tenant"."signals"
  where ("tenant"."signals"."pipeline_execution_id" = "tenant"."task_executions"."pipeline_execution_id" and "tenant"."signals"."name" = "tenant"."task_executions"."wait_signal"))) END as "signal_payload", "p_id", "p_workflow_name", "p_workflow_version", "p_status", "p_input", "p_idempotency_key", "p_scheduled_time", "p_schedule_id", "p_remaining_tasks", "p_failed_tasks", "p_error", "p_pause_reason", "p_trace_context", "p_run_at", "p_priority", "p_concurrency", "p_created_at", "p_started_at", "p_completed_at", "p_updated_at"), "started" as (update "tenant"."pipeline_executions"
  set "status" = $21, "started_at" = $22::timestamp (3) with time zone, "updated_at" = $23::timestamp (3) with time zone
  where ("tenant"."pipeline_executions"."status" = 'pending' and "tenant"."pipeline_executions"."id" IN (SELECT "leased"."pipeline_execution_id" FROM "leased"))
  returning "id" as "started_id"), "terminal" as (select "pipeline_execution_id" as "terminal_pipeline_id", json_agg(tt ORDER BY "position") as "terminal_tasks"
  from "tenant"."task_executions" "tt"
  where ("tt"."pipeline_execution_id" IN (SELECT "leased"."pipeline_execution_id" FROM "leased" WHERE "leased"."map_of" IS NULL) and "tt"."status" IN ('completed', 'failed', 'skipped', 'cancelled') and "tt"."map_of" is null)
  group by "tt"."pipeline_execution_id")
  select to_json("leased") as "row", "started_id", "terminal_tasks"
  from "leased"
  left join "started" on "started_id" = "leased"."pipeline_execution_id"
  left join "terminal" on "terminal_pipeline_id" = "leased"."pipeline_execution_id"
  order by "leased"."priority" desc, "leased"."available_at" asc;

-- lease/renewLeases
update "tenant"."task_executions"
  set "lease_expires_at" = $1::timestamp (3) with time zone, "started_at" = CASE WHEN $2::boolean THEN coalesce("tenant"."task_executions"."started_at", $3::timestamp (3) with time zone) ELSE "tenant"."task_executions"."started_at" END, "updated_at" = $4::timestamp (3) with time zone
  where ("tenant"."task_executions"."lease_owner" = $5::text and "tenant"."task_executions"."status" = 'running' and "tenant"."task_executions"."pipeline_execution_id" = ANY($6::uuid[]) and ("tenant"."task_executions"."pipeline_execution_id", "tenant"."task_executions"."task_id", "tenant"."task_executions"."attempt") IN (SELECT * FROM unnest($7::uuid[], $8::text[], $9::int[])))
  returning "id";

-- lease/releaseLeases
update "tenant"."task_executions"
  set "status" = $1, "available_at" = $2::timestamp (3) with time zone, "lease_owner" = $3, "lease_expires_at" = $4, "attempt_history" = CASE WHEN "tenant"."task_executions"."started_at" IS NULL THEN "tenant"."task_executions"."attempt_history" ELSE coalesce("tenant"."task_executions"."attempt_history", '[]'::jsonb) || jsonb_build_array(jsonb_build_object('attempt', "tenant"."task_executions"."attempt",
    'runnerId', "tenant"."task_executions"."lease_owner", 'startedAt', (extract(epoch FROM (coalesce("tenant"."task_executions"."started_at", $5::timestamp (3) with time zone))::timestamptz) * 1000)::bigint,
    'endedAt', (extract(epoch FROM ($6::timestamp (3) with time zone)::timestamptz) * 1000)::bigint, 'outcome', ('released')::text, 'error', (NULL)::text)) END, "updated_at" = $7::timestamp (3) with time zone
  where ("tenant"."task_executions"."lease_owner" = $8::text and "tenant"."task_executions"."status" = 'running' and "tenant"."task_executions"."pipeline_execution_id" = ANY($9::uuid[]) and ("tenant"."task_executions"."pipeline_execution_id", "tenant"."task_executions"."task_id", "tenant"."task_executions"."attempt") IN (SELECT * FROM unnest($10::uuid[], $11::text[], $12::int[])));

-- lease/countStalledTasks
select count(*)::int
  from "tenant"."task_executions"
  where ("tenant"."task_executions"."status" = 'running' and "tenant"."task_executions"."lease_expires_at" < $1::timestamp (3) with time zone);

-- finish/finishTasks
WITH req AS (
  SELECT * FROM unnest($2::int[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::int[], $8::text[], $9::text[],
    $10::text[], $11::int[], $12::timestamptz[], $13::timestamptz[], $14::boolean[], $15::text[], $18::text[])
    AS r(ord, id, pipeline_id, task_id, runner_id, attempt, status, output, error, failed, available_at, completed_at, terminal,
      failure, attempt_outcome)
), locked AS (
  SELECT p.id, p.status AS locked_status FROM "tenant"."pipeline_executions" p
  WHERE p.id IN (SELECT pipeline_id FROM req) ORDER BY p.id FOR NO KEY UPDATE
), fenced AS (
  UPDATE "tenant"."task_executions" t SET status = r.status, output = r.output::jsonb, error = r.error,
    failed_attempts = t.failed_attempts + r.failed, available_at = coalesce(r.available_at, t.available_at),
    completed_at = r.completed_at, started_at = coalesce(t.started_at, $1),
    attempt_history = CASE WHEN r.attempt_outcome IS NULL THEN t.attempt_history ELSE coalesce(t.attempt_history, '[]'::jsonb) || jsonb_build_array(jsonb_build_object('attempt', t.attempt,
    'runnerId', t.lease_owner, 'startedAt', (extract(epoch FROM (coalesce(t.started_at, $1))::timestamptz) * 1000)::bigint,
    'endedAt', (extract(epoch FROM ($1)::timestamptz) * 1000)::bigint, 'outcome', (r.attempt_outcome)::text, 'error', (r.error)::text)) END,
    lease_owner = NULL, lease_expires_at = NULL,
    updated_at = $1
  FROM req r
  WHERE t.pipeline_execution_id = r.pipeline_id AND t.task_id = r.task_id AND t.id = r.id
    AND t.lease_owner = r.runner_id AND t.attempt = r.attempt AND t.status = 'running'
    AND (SELECT count(*) FROM locked) >= 0
  RETURNING r.ord, t.pipeline_execution_id, t.task_id, r.failed, r.terminal, r.failure
), deps AS (
  SELECT f.pipeline_execution_id AS pipeline_id, d.task_id, count(*)::int AS n, min(f.ord) AS ord
  FROM fenced f JOIN unnest($16::int[], $17::text[]) AS d(ord, task_id) ON d.ord = f.ord
  WHERE f.terminal GROUP BY 1, 2
), released AS (
  UPDATE "tenant"."task_executions" t SET pending_deps = t.pending_deps - d.n,
    status = CASE WHEN t.pending_deps = d.n AND t.status = 'not_started' THEN 'ready' ELSE t.status END,
    available_at = CASE WHEN t.pending_deps = d.n AND t.status = 'not_started'
      THEN $1 + t.delay_ms * interval '1 millisecond' ELSE t.available_at END,
    updated_at = $1
  FROM deps d WHERE t.pipeline_execution_id = d.pipeline_id AND t.task_id = d.task_id AND t.pending_deps > 0
  RETURNING d.ord, t.status, t.pending_deps
), counts AS (
  SELECT f.pipeline_execution_id AS pipeline_id, count(*)::int AS n, sum(f.failed)::int AS failed,
    (array_agg('task ' || f.task_id || ' failed: ' || f.failure ORDER BY f.ord) FILTER (WHERE f.failure IS NOT NULL))[1] AS failure,
    max(f.ord) AS last_ord
  FROM fenced f WHERE f.terminal GROUP BY 1
), counted AS (
  UPDATE "tenant"."pipeline_executions" p SET remaining_tasks = p.remaining_tasks - c.n, failed_tasks = p.failed_tasks + c.failed,
    error = coalesce(p.error, c.failure),
    status = CASE WHEN p.remaining_tasks <= c.n AND p.status IN ('pending', 'running', 'paused')
      THEN (CASE WHEN p.failed_tasks + c.failed > 0 THEN 'failed' ELSE 'completed' END) ELSE p.status END,
    completed_at = CASE WHEN p.remaining_tasks <= c.n AND p.status IN ('pending', 'running', 'paused') THEN $1 ELSE p.completed_at END,
    updated_at = $1
  FROM counts c JOIN locked l ON l.id = c.pipeline_id
  WHERE p.id = c.pipeline_id
  RETURNING c.last_ord, l.locked_status IN ('pending', 'running', 'paused') AND p.remaining_tasks <= 0 AS ended,
    to_json(p) AS row
)
SELECT r.ord, f.ord IS NOT NULL AS accepted,
  (SELECT count(*) FROM released x WHERE x.ord = r.ord AND x.status = 'ready' AND x.pending_deps = 0)::int AS readied,
  coalesce(c.ended, false) AS ended, c.row
FROM req r LEFT JOIN fenced f ON f.ord = r.ord LEFT JOIN counted c ON c.last_ord = r.ord ORDER BY r.ord;

-- control/resumePipeline
update "tenant"."pipeline_executions"
  set "status" = CASE WHEN "tenant"."pipeline_executions"."started_at" IS NULL THEN 'pending' ELSE 'running' END, "pause_reason" = $1, "updated_at" = $2::timestamp (3) with time zone
  where ("tenant"."pipeline_executions"."id" = $3::uuid and "tenant"."pipeline_executions"."status" = 'paused')
  returning "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at";

-- retention/deleteTerminalPipelines
delete
  from "tenant"."pipeline_executions"
  where "tenant"."pipeline_executions"."id" in (select "id"
  from "tenant"."pipeline_executions"
  where ("tenant"."pipeline_executions"."status" IN ('completed', 'failed', 'cancelled') and "tenant"."pipeline_executions"."completed_at" < $1::timestamp (3) with time zone and ("tenant"."pipeline_executions"."scheduled_time" IS NULL OR NOT EXISTS (SELECT 1 FROM "tenant"."cron_executions" ce
  WHERE ce.status = 'claimed' AND ce.id = (CASE WHEN "tenant"."pipeline_executions"."idempotency_key"
    ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN "tenant"."pipeline_executions"."idempotency_key"::uuid END))))
  limit $2
  for update skip locked);

-- retention/deleteExpiredRateLimitStarts
delete
  from "tenant"."rate_limit_starts"
  where ctid IN (SELECT ctid FROM "tenant"."rate_limit_starts" WHERE "tenant"."rate_limit_starts"."expires_at" < $1::timestamp (3) with time zone LIMIT $2);

-- signals/sendSignal
WITH locked AS (
  SELECT "tenant"."pipeline_executions"."status" FROM "tenant"."pipeline_executions" WHERE "tenant"."pipeline_executions"."id" = $1::uuid FOR UPDATE
), stored AS (
  INSERT INTO "tenant"."signals" ("pipeline_execution_id", "name", "payload", "received_at")
  SELECT $2::uuid, $3::text, $4::jsonb, $5::timestamp (3) with time zone FROM locked
  WHERE locked.status NOT IN ('completed', 'failed', 'cancelled')
  ON CONFLICT DO NOTHING RETURNING 1
), woken AS (
  UPDATE "tenant"."task_executions" SET "available_at" = CASE WHEN "tenant"."task_executions"."status" = 'ready' AND "tenant"."task_executions"."available_at" > $6::timestamp (3) with time zone THEN $7::timestamp (3) with time zone ELSE "tenant"."task_executions"."available_at" END,
    "updated_at" = CASE WHEN "tenant"."task_executions"."status" = 'ready' AND "tenant"."task_executions"."available_at" > $8::timestamp (3) with time zone THEN $9::timestamp (3) with time zone ELSE "tenant"."task_executions"."updated_at" END
  WHERE ("tenant"."task_executions"."pipeline_execution_id" = $10::uuid and "tenant"."task_executions"."wait_signal" = $11::text and "tenant"."task_executions"."status" IN ('ready', 'running')) AND EXISTS (SELECT FROM stored)
)
SELECT (SELECT status FROM locked) AS status, (SELECT count(*)::int FROM stored) AS stored;

-- signals/sharePipeline
select "id"
  from "tenant"."pipeline_executions"
  where "tenant"."pipeline_executions"."id" = $1::uuid for share;

-- signals/selectSignal
select "payload"
  from "tenant"."signals"
  where ("tenant"."signals"."pipeline_execution_id" = $1::uuid and "tenant"."signals"."name" = $2::text);

-- pipelines/selectPipelines
select "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at"
  from "tenant"."pipeline_executions"
  where ("tenant"."pipeline_executions"."workflow_name" = $1 and "tenant"."pipeline_executions"."status" = $2)
  order by "tenant"."pipeline_executions"."created_at" desc, "tenant"."pipeline_executions"."id" desc
  limit $3;

-- pipelines/countWork
select (SELECT count(*)::int FROM "tenant"."task_executions" WHERE "status" = 'ready' AND "available_at" <= $1::timestamptz), (SELECT count(*)::int FROM "tenant"."pipeline_executions" WHERE "status" = 'running')
  from (SELECT 1) AS one;

-- admission/lockGroups
SELECT pg_advisory_xact_lock(hashtextextended($1 || k, 0))
      FROM unnest($2::text[]) AS k ORDER BY k;

-- admission/tryLockGroup
SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked;

-- admission/selectQueuedGroupNames
select distinct "group_name"
  from "tenant"."concurrency_slots"
  where NOT "tenant"."concurrency_slots"."admitted";

-- admission/countActive
WITH ended AS (
      DELETE FROM "tenant"."concurrency_slots" AS ended_slot USING "tenant"."pipeline_executions" AS ended_pipeline
      WHERE ended_slot.group_name = ANY($1::text[]) AND ended_slot.admitted AND ended_pipeline.id = ended_slot.pipeline_execution_id
        AND ended_pipeline.status IN ('completed', 'failed', 'cancelled')
      RETURNING ended_slot.group_name, ended_slot.pipeline_execution_id
    ), active AS (
      SELECT slot.group_name, count(*)::int AS active FROM "tenant"."concurrency_slots" AS slot
      WHERE slot.group_name = ANY($2::text[]) AND slot.admitted AND NOT EXISTS (SELECT 1 FROM ended
        WHERE ended.group_name = slot.group_name AND ended.pipeline_execution_id = slot.pipeline_execution_id)
      GROUP BY slot.group_name
    ) SELECT group_name AS "group", active FROM active;

-- admission/countActiveWithHeads
WITH ended AS (
      DELETE FROM "tenant"."concurrency_slots" AS ended_slot USING "tenant"."pipeline_executions" AS ended_pipeline
      WHERE ended_slot.group_name = ANY($1::text[]) AND ended_slot.admitted AND ended_pipeline.id = ended_slot.pipeline_execution_id
        AND ended_pipeline.status IN ('completed', 'failed', 'cancelled')
      RETURNING ended_slot.group_name, ended_slot.pipeline_execution_id
    ), active AS (
      SELECT slot.group_name, count(*)::int AS active FROM "tenant"."concurrency_slots" AS slot
      WHERE slot.group_name = ANY($2::text[]) AND slot.admitted AND NOT EXISTS (SELECT 1 FROM ended
        WHERE ended.group_name = slot.group_name AND ended.pipeline_execution_id = slot.pipeline_execution_id)
      GROUP BY slot.group_name
    )
    SELECT group_name AS "group", active, NULL::uuid AS pipeline_execution_id, NULL::int AS slot_limit,
      NULL::jsonb AS concurrency, 0 AS rank FROM active
    UNION ALL
    SELECT g.name, NULL, q.pipeline_execution_id, q.slot_limit, q.concurrency, q.rank
    FROM unnest($3::text[]) AS g(name)
    CROSS JOIN LATERAL (
      SELECT slot.pipeline_execution_id, slot.slot_limit, pipeline.concurrency,
        row_number() OVER (ORDER BY slot.priority DESC, slot.queued_at, slot.pipeline_execution_id) AS rank
      FROM "tenant"."concurrency_slots" AS slot JOIN "tenant"."pipeline_executions" AS pipeline ON pipeline.id = slot.pipeline_execution_id
      WHERE slot.group_name = g.name AND NOT slot.admitted AND pipeline.status = 'pending'
      ORDER BY slot.priority DESC, slot.queued_at, slot.pipeline_execution_id
      LIMIT $4
    ) AS q
    ORDER BY 1, 6;

-- admission/selectQueued
select "tenant"."concurrency_slots"."pipeline_execution_id", "tenant"."concurrency_slots"."slot_limit", "tenant"."pipeline_executions"."concurrency"
  from "tenant"."concurrency_slots"
  inner join "tenant"."pipeline_executions" on "tenant"."pipeline_executions"."id" = "tenant"."concurrency_slots"."pipeline_execution_id"
  where ("tenant"."concurrency_slots"."group_name" = $1 and NOT "tenant"."concurrency_slots"."admitted" and "tenant"."pipeline_executions"."status" = 'pending')
  order by "tenant"."concurrency_slots"."priority" desc, "tenant"."concurrency_slots"."queued_at" asc, "tenant"."concurrency_slots"."pipeline_execution_id" asc
  limit $2;

-- admission/admitSlots
with "admitted_slots" as (update "tenant"."concurrency_slots"
  set "admitted" = $1
  where "tenant"."concurrency_slots"."pipeline_execution_id" = ANY($2::uuid[])
  returning "pipeline_execution_id")
  update "tenant"."task_executions"
  set "status" = $3, "available_at" = greatest("tenant"."task_executions"."available_at", $4::timestamptz + "tenant"."task_executions"."delay_ms" * interval '1 millisecond'), "updated_at" = $5
  where ("tenant"."task_executions"."pipeline_execution_id" = ANY($6::uuid[]) and "tenant"."task_executions"."status" = 'not_started' and "tenant"."task_executions"."pending_deps" = 0);

-- admission/selectOldestActive
select "tenant"."concurrency_slots"."pipeline_execution_id"
  from "tenant"."concurrency_slots"
  inner join "tenant"."pipeline_executions" on "tenant"."pipeline_executions"."id" = "tenant"."concurrency_slots"."pipeline_execution_id"
  where ("tenant"."concurrency_slots"."group_name" = $1 and "tenant"."concurrency_slots"."admitted" and "tenant"."pipeline_executions"."status" NOT IN ('completed', 'failed', 'cancelled'))
  order by "tenant"."concurrency_slots"."queued_at" asc, "tenant"."concurrency_slots"."pipeline_execution_id" asc
  limit $2
  for update of "pipeline_executions" skip locked;

-- admission/insertSlots
insert into "tenant"."concurrency_slots" ("group_name", "pipeline_execution_id", "slot_limit", "priority", "queued_at", "admitted")
  values ($1, $2, $3, $4, $5, $6)
  on conflict ("group_name","pipeline_execution_id") do
  update set "slot_limit" = excluded.slot_limit, "queued_at" = excluded.queued_at, "admitted" = $7;

-- admission/selectQueuedGroups
select "queued"."pipeline_execution_id", "queued"."group_name", "queued"."slot_limit", (SELECT count(*)::int FROM "tenant"."concurrency_slots" AS a JOIN "tenant"."pipeline_executions" AS ap ON ap.id = a.pipeline_execution_id
    WHERE a.group_name = "queued"."group_name" AND a.admitted AND ap.status NOT IN ('completed', 'failed', 'cancelled'))
  from "tenant"."concurrency_slots" "queued"
  inner join "tenant"."pipeline_executions" on "tenant"."pipeline_executions"."id" = "queued"."pipeline_execution_id"
  where ("queued"."pipeline_execution_id" = ANY($1::uuid[]) and NOT "queued"."admitted" and "tenant"."pipeline_executions"."status" = 'pending');

-- admission/selectGroupOccupancy
select "tenant"."concurrency_slots"."group_name", "tenant"."pipeline_executions"."workflow_name", count(*) FILTER (WHERE "tenant"."concurrency_slots"."admitted")::int, count(*) FILTER (WHERE NOT "tenant"."concurrency_slots"."admitted")::int, max("tenant"."concurrency_slots"."slot_limit")
  from "tenant"."concurrency_slots"
  inner join "tenant"."pipeline_executions" on "tenant"."pipeline_executions"."id" = "tenant"."concurrency_slots"."pipeline_execution_id"
  where ("tenant"."pipeline_executions"."status" NOT IN ('completed', 'failed', 'cancelled') and "tenant"."pipeline_executions"."workflow_name" = $1)
  group by "tenant"."pipeline_executions"."workflow_name", "tenant"."concurrency_slots"."group_name"
  order by "tenant"."pipeline_executions"."workflow_name" asc, "tenant"."concurrency_slots"."group_name" asc;

-- lease/deferTask
update "tenant"."task_executions"
  set "status" = $1, "attempt" = "tenant"."task_executions"."attempt" - 1, "available_at" = $2, "waits_until" = coalesce("tenant"."task_executions"."waits_until", $3), "lease_owner" = $4, "lease_expires_at" = $5, "started_at" = $6, "updated_at" = $7
  where ("tenant"."task_executions"."pipeline_execution_id" = $8 and "tenant"."task_executions"."task_id" = $9 and "tenant"."task_executions"."status" = 'running' and "tenant"."task_executions"."lease_owner" = $10 and "tenant"."task_executions"."attempt" = $11)
  returning "attempt";

-- buckets/lockBucket
SELECT pg_advisory_xact_lock(hashtextextended($1 || k, 0))
      FROM unnest($2::text[]) AS k ORDER BY k;

-- buckets/selectDatabaseTime
SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms;

-- buckets/selectHeldLeases
select "pipeline_execution_id", "task_id"
  from "tenant"."task_executions"
  where ("tenant"."task_executions"."status" = 'running' and ("tenant"."task_executions"."pipeline_execution_id", "tenant"."task_executions"."task_id", "tenant"."task_executions"."lease_owner", "tenant"."task_executions"."attempt") IN (SELECT * FROM unnest(
    $1::uuid[],
    $2::text[],
    $3::text[],
    $4::int[]))) for update;

-- buckets/deleteExpiredStarts
delete
  from "tenant"."rate_limit_starts"
  where ("tenant"."rate_limit_starts"."bucket" = $1 and "tenant"."rate_limit_starts"."expires_at" <= $2);

-- buckets/countStarts
select count(*)
  from "tenant"."rate_limit_starts"
  where ("tenant"."rate_limit_starts"."bucket" = $1 and "tenant"."rate_limit_starts"."started_at" > $2);

-- buckets/selectNthStart
select "started_at"
  from "tenant"."rate_limit_starts"
  where ("tenant"."rate_limit_starts"."bucket" = $1 and "tenant"."rate_limit_starts"."started_at" > $2)
  order by "tenant"."rate_limit_starts"."started_at" asc
  limit $3
  offset $4;

-- buckets/insertStarts
insert into "tenant"."rate_limit_starts" ("bucket", "started_at", "expires_at")
  values ($1, $2, $3), ($4, $5, $6);

-- buckets/joinHerd
insert into "tenant"."rate_limit_buckets" ("bucket", "herd_at", "herd_size")
  values ($1, $2, $3)
  on conflict ("bucket") do
  update set "herd_at" = excluded.herd_at, "herd_size" = CASE WHEN "tenant"."rate_limit_buckets"."herd_at" = excluded.herd_at THEN "tenant"."rate_limit_buckets"."herd_size" + excluded.herd_size ELSE excluded.herd_size END
  returning "herd_size" - $4;

-- maps/parkMapTask
update "tenant"."task_executions"
  set "pending_deps" = $1, "lease_owner" = $2, "lease_expires_at" = $3, "started_at" = coalesce("tenant"."task_executions"."started_at", $4), "updated_at" = $5
  where ("tenant"."task_executions"."pipeline_execution_id" = $6 and "tenant"."task_executions"."task_id" = $7 and "tenant"."task_executions"."status" = 'running' and "tenant"."task_executions"."lease_owner" = $8 and "tenant"."task_executions"."attempt" = $9)
  returning "workflow_name", "position", "priority";

-- maps/insertInstances
INSERT INTO "tenant"."task_executions" (id, pipeline_execution_id, workflow_name, task_id, position, status, attempt,
  failed_attempts, pending_deps, available_at, priority, map_of, map_index, map_item, updated_at)
SELECT i.id, $1, $2, i.task_id, $3, 'ready', 0,
  0, 0, $4::timestamptz, $5, $6, i.ord - 1, i.item, $7::timestamptz
FROM unnest($8::uuid[], $9::text[], $10::jsonb[])
  WITH ORDINALITY AS i(id, task_id, item, ord);

-- maps/countDownMapTask
update "tenant"."task_executions"
  set "pending_deps" = "tenant"."task_executions"."pending_deps" - $1, "updated_at" = $2
  where ("tenant"."task_executions"."pipeline_execution_id" = $3 and "tenant"."task_executions"."task_id" = $4 and "tenant"."task_executions"."status" = 'running' and "tenant"."task_executions"."lease_owner" = $5)
  returning "id", "attempt", "pending_deps";

-- maps/selectMapInstances
select "id", "pipeline_execution_id", "workflow_name", "task_id", "position", "status", "attempt", "failed_attempts", "pending_deps", "available_at", "waits_until", "map_of", "map_index", "map_item", "lease_owner", "lease_expires_at", "runner_id", "attempt_history", "output", "error", "started_at", "completed_at"
  from "tenant"."task_executions"
  where ("tenant"."task_executions"."pipeline_execution_id" = $1 and "tenant"."task_executions"."map_of" = $2)
  order by "tenant"."task_executions"."map_index" asc;

-- maps/selectMapInstancePage
select "id", "pipeline_execution_id", "workflow_name", "task_id", "position", "status", "attempt", "failed_attempts", "pending_deps", "available_at", "waits_until", "map_of", "map_index", "map_item", "lease_owner", "lease_expires_at", "runner_id", "attempt_history", "output", "error", "started_at", "completed_at"
  from "tenant"."task_executions"
  where ("tenant"."task_executions"."pipeline_execution_id" = $1 and "tenant"."task_executions"."map_of" = $2)
  order by "tenant"."task_executions"."map_index" asc
  limit $3;

-- maps/cancelMapInstances
update "tenant"."task_executions"
  set "status" = $1, "lease_owner" = $2, "lease_expires_at" = $3, "completed_at" = $4, "updated_at" = $5
  where ("tenant"."task_executions"."pipeline_execution_id" = $6 and "tenant"."task_executions"."map_of" = $7 and "tenant"."task_executions"."status" NOT IN ('completed', 'failed', 'skipped', 'cancelled'));

-- maps/countMapInstancesOf
select "map_of", count(*)::int, (count(*) FILTER (WHERE "status" = 'completed'))::int, (count(*) FILTER (WHERE "status" = 'failed'))::int, (count(*) FILTER (WHERE "status" = 'running'))::int
  from "tenant"."task_executions"
  where ("tenant"."task_executions"."pipeline_execution_id" = $1 and "tenant"."task_executions"."map_of" is not null)
  group by "tenant"."task_executions"."map_of"
  order by min("tenant"."task_executions"."position");

-- maps/deleteMapInstances
delete
  from "tenant"."task_executions"
  where ("tenant"."task_executions"."pipeline_execution_id" = $1 and "tenant"."task_executions"."map_of" in (select "task_id"
  from "tenant"."task_executions"
  where ("tenant"."task_executions"."pipeline_execution_id" = $2 and "tenant"."task_executions"."id" in ($3))));

-- control/cancelPipelineRow
update "tenant"."pipeline_executions"
  set "status" = $1, "remaining_tasks" = $2, "completed_at" = $3, "updated_at" = $4
  where ("tenant"."pipeline_executions"."id" = $5 and "tenant"."pipeline_executions"."status" IN ('pending', 'running', 'paused'))
  returning "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at";

-- control/cancelTasks
update "tenant"."task_executions"
  set "status" = $1, "lease_owner" = $2, "lease_expires_at" = $3, "completed_at" = $4, "updated_at" = $5
  where ("tenant"."task_executions"."pipeline_execution_id" = $6 and "tenant"."task_executions"."status" NOT IN ('completed', 'failed', 'skipped', 'cancelled'));

-- control/forgetQueuedSlots
delete
  from "tenant"."concurrency_slots"
  where ("tenant"."concurrency_slots"."pipeline_execution_id" = $1 and NOT "tenant"."concurrency_slots"."admitted");

-- control/pausePipelineRow
update "tenant"."pipeline_executions"
  set "status" = $1, "pause_reason" = $2, "updated_at" = $3
  where ("tenant"."pipeline_executions"."id" = $4 and "tenant"."pipeline_executions"."status" IN ('pending', 'running'))
  returning "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at";

-- control/requeueRunningTasks
update "tenant"."task_executions"
  set "status" = $1, "available_at" = $2, "lease_owner" = $3, "lease_expires_at" = $4, "updated_at" = $5
  where ("tenant"."task_executions"."pipeline_execution_id" = $6 and "tenant"."task_executions"."status" = 'running' and "tenant"."task_executions"."lease_owner" <> $7);

-- control/retryPipelineRow
update "tenant"."pipeline_executions"
  set "status" = CASE WHEN "tenant"."pipeline_executions"."concurrency" IS NULL THEN 'running' ELSE 'pending' END, "remaining_tasks" = $1, "failed_tasks" = $2, "error" = $3, "pause_reason" = $4, "completed_at" = $5, "updated_at" = $6
  where ("tenant"."pipeline_executions"."id" = $7 and "tenant"."pipeline_executions"."status" IN ('failed', 'cancelled'))
  returning "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at";

-- control/retryTasks
update "tenant"."task_executions"
  set "status" = v.status, "pending_deps" = v.pending_deps, "available_at" = $1::timestamptz + "tenant"."task_executions"."delay_ms" * interval '1 millisecond', "waits_until" = $2, "lease_owner" = $3, "lease_expires_at" = $4, "completed_at" = $5, "updated_at" = $6
  from unnest($7::uuid[],
      $8::text[],
      $9::int[]) AS v(id, status, pending_deps)
  where ("tenant"."task_executions"."id" = v.id and "tenant"."task_executions"."pipeline_execution_id" = $10);
