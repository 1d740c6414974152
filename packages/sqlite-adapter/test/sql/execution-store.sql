-- pipelines/insertPipelines#1
insert into "pipeline_executions" ("id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at")
  values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, null, null, ?, ?, ?, ?, ?, null, null, ?)
  on conflict do nothing
  returning "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at";

-- pipelines/insertPipelines#2
insert into "task_executions" ("id", "pipeline_execution_id", "workflow_name", "task_id", "position", "status", "attempt", "failed_attempts", "pending_deps", "available_at", "wait_signal", "waits_until", "map_of", "map_index", "map_item", "delay_ms", "priority", "lease_owner", "lease_expires_at", "runner_id", "attempt_history", "output", "error", "started_at", "completed_at", "updated_at")
  values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, null, null, null, null, ?, ?, null, null, null, null, null, null, null, null, ?);

-- pipelines/selectPipeline
select "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at"
  from "pipeline_executions"
  where "pipeline_executions"."id" = ?;

-- pipelines/selectPipelineByKey
select "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at"
  from "pipeline_executions"
  where "pipeline_executions"."idempotency_key" = ?;

-- pipelines/selectPipelineIdsByPrefix
select "id"
  from "pipeline_executions"
  where ("pipeline_executions"."id" >= ? and "pipeline_executions"."id" <= ?)
  order by "pipeline_executions"."id" asc
  limit ?;

-- pipelines/selectTasks
select "id", "pipeline_execution_id", "workflow_name", "task_id", "position", "status", "attempt", "failed_attempts", "pending_deps", "available_at", "waits_until", "map_of", "map_index", "map_item", "lease_owner", "lease_expires_at", "runner_id", "attempt_history", "output", "error", "started_at", "completed_at"
  from "task_executions"
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."map_of" is null)
  order by "task_executions"."position" asc;

-- claim/claimTasks#1
select "task_executions"."id", "task_executions"."status", "task_executions"."available_at", "task_executions"."priority", "task_executions"."started_at"
  from "task_executions"
  inner join "pipeline_executions" on "pipeline_executions"."id" = "task_executions"."pipeline_execution_id"
  where (("task_executions"."status" = 'ready' AND "task_executions"."priority" = 0 and "task_executions"."available_at" <= ?) and +"pipeline_executions"."status" IN ('pending', 'running') and "task_executions"."workflow_name" || char(31) || coalesce("task_executions"."map_of", "task_executions"."task_id") IN (SELECT value FROM json_each(?)))
  order by "task_executions"."available_at" asc
  limit ?;

-- claim/claimTasks#2
select "task_executions"."id", "task_executions"."status", "task_executions"."available_at", "task_executions"."priority", "task_executions"."started_at"
  from "task_executions"
  inner join "pipeline_executions" on "pipeline_executions"."id" = "task_executions"."pipeline_execution_id"
  where (("task_executions"."status" = 'ready' AND "task_executions"."priority" <> 0 and "task_executions"."available_at" <= ?) and +"pipeline_executions"."status" IN ('pending', 'running') and "task_executions"."workflow_name" || char(31) || coalesce("task_executions"."map_of", "task_executions"."task_id") IN (SELECT value FROM json_each(?)))
  order by "task_executions"."priority" desc, "task_executions"."available_at" asc
  limit ?;

-- claim/claimTasks#3
select "task_executions"."id", "task_executions"."status", "task_executions"."available_at", "task_executions"."priority", "task_executions"."started_at"
  from "task_executions"
  inner join "pipeline_executions" on "pipeline_executions"."id" = "task_executions"."pipeline_execution_id"
  where (("task_executions"."status" = 'running' and "task_executions"."lease_expires_at" < ?) and +"pipeline_executions"."status" IN ('pending', 'running') and "task_executions"."workflow_name" || char(31) || coalesce("task_executions"."map_of", "task_executions"."task_id") IN (SELECT value FROM json_each(?)))
  order by "task_executions"."priority" desc, "task_executions"."available_at" asc
  limit ?;

-- claim/claimTasks#4
update "task_executions"
  set "status" = ?, "attempt" = "task_executions"."attempt" + 1, "failed_attempts" = "task_executions"."failed_attempts" + (CASE WHEN "task_executions"."status" = 'running' AND "task_executions"."started_at" IS NOT NULL THEN 1 ELSE 0 END), "lease_owner" = ?, "lease_expires_at" = ?, "runner_id" = ?, "attempt_history" = CASE WHEN "task_executions"."status" = 'running' AND "task_executions"."started_at" IS NOT NULL THEN json_insert(coalesce("task_executions"."attempt_history", '[]'), '$[#]', json_object('attempt', "task_executions"."attempt",
    'runnerId', "task_executions"."lease_owner", 'startedAt', coalesce("task_executions"."started_at", "task_executions"."lease_expires_at"), 'endedAt', "task_executions"."lease_expires_at",
    'outcome', 'lease_expired', 'error', 'lease expired (held by ' || coalesce("task_executions"."lease_owner", 'nobody') || ')')) ELSE "task_executions"."attempt_history" END, "error" = CASE WHEN "task_executions"."status" = 'running' AND "task_executions"."started_at" IS NOT NULL THEN 'lease expired (held by ' || coalesce("task_executions"."lease_owner", 'nobody') || ')' ELSE "task_executions"."error" END, "started_at" = CASE WHEN "task_executions"."id" IN (SELECT unhex(value) FROM json_each(?)) THEN ? END, "updated_at" = ?
  where "task_executions"."id" IN (SELECT unhex(value) FROM json_each(?))
  returning "id", "pipeline_execution_id", "workflow_name", "task_id", "position", "status", "attempt", "failed_attempts", "pending_deps", "available_at", "waits_until", "map_of", "map_index", "map_item", "lease_owner", "lease_expires_at", "runner_id", "attempt_history", "output", "error", "started_at", "completed_at", "priority", CASE WHEN "wait_signal" IS NOT NULL THEN ((select "payload"
  from "signals"
  where ("signals"."pipeline_execution_id" = "task_executions"."pipeline_execution_id" and "signals"."name" = "task_executions"."wait_signal"))) END;

-- claim/claimTasks#5
update "pipeline_executions"
  set "status" = ?, "started_at" = ?, "updated_at" = ?
  where ("pipeline_executions"."status" = 'pending' and "pipeline_executions"."id" IN (SELECT unhex(value) FROM json_each(?)));

-- claim/claimTasks#6
select "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at"
  from "pipeline_executions"
  where "pipeline_executions"."id" IN (SELECT unhex(value) FROM json_each(?));

-- claim/claimTasks#7
select "id", "pipeline_execution_id", "workflow_name", "task_id", "position", "status", "attempt", "failed_attempts", "pending_deps", "available_at", "waits_until", "map_of", "map_index", "map_item", "lease_owner", "lease_expires_at", "runner_id", "attempt_history", "output", "error", "started_at", "completed_at"
  from "task_executions"
  where ("task_executions"."pipeline_execution_id" IN (SELECT unhex(value) FROM json_each(?)) and "task_executions"."status" IN ('completed', 'failed', 'skipped', 'cancelled') and "task_executions"."map_of" is null)
  order by "task_executions"."position" asc;

-- lease/deferTask
update "task_executions"
  set "status" = ?, "attempt" = "task_executions"."attempt" - 1, "available_at" = ?, "waits_until" = coalesce("task_executions"."waits_until", ?), "lease_owner" = ?, "lease_expires_at" = ?, "started_at" = ?, "updated_at" = ?
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."task_id" = ? and "task_executions"."status" = 'running' and "task_executions"."lease_owner" = ? and "task_executions"."attempt" = ?)
  returning "attempt";

-- lease/renewLeases
update "task_executions"
  set "lease_expires_at" = ?, "started_at" = CASE WHEN ? THEN coalesce("task_executions"."started_at", ?) ELSE "task_executions"."started_at" END, "updated_at" = ?
  where ("task_executions"."lease_owner" = ? and "task_executions"."status" = 'running' and "task_executions"."id" IN (SELECT unhex(value) FROM json_each(?)) and lower(hex("task_executions"."id")) || ':' || "task_executions"."attempt" IN (SELECT value FROM json_each(?)))
  returning "id";

-- lease/releaseLeases
update "task_executions"
  set "status" = ?, "available_at" = ?, "lease_owner" = ?, "lease_expires_at" = ?, "attempt_history" = CASE WHEN "task_executions"."started_at" IS NULL THEN "task_executions"."attempt_history" ELSE json_insert(coalesce("task_executions"."attempt_history", '[]'), '$[#]', json_object('attempt', "task_executions"."attempt",
    'runnerId', "task_executions"."lease_owner", 'startedAt', coalesce("task_executions"."started_at", ?), 'endedAt', ?,
    'outcome', 'released', 'error', NULL)) END, "updated_at" = ?
  where ("task_executions"."lease_owner" = ? and "task_executions"."status" = 'running' and "task_executions"."id" IN (SELECT unhex(value) FROM json_each(?)) and lower(hex("task_executions"."id")) || ':' || "task_executions"."attempt" IN (SELECT value FROM json_each(?)));

-- lease/countStalledTasks
select count(*)
  from "task_executions"
  where ("task_executions"."status" = 'running' and "task_executions"."lease_expires_at" < ?);

-- finish/finishTasks#1
update "task_executions"
  set "status" = ?, "failed_attempts" = "task_executions"."failed_attempts" + ?, "available_at" = coalesce(?, "task_executions"."available_at"), "lease_owner" = ?, "lease_expires_at" = ?, "attempt_history" = CASE WHEN ? IS NULL THEN "task_executions"."attempt_history" ELSE json_insert(coalesce("task_executions"."attempt_history", '[]'), '$[#]', json_object('attempt', "task_executions"."attempt",
    'runnerId', "task_executions"."lease_owner", 'startedAt', coalesce("task_executions"."started_at", ?), 'endedAt', ?,
    'outcome', ?, 'error', ?)) END, "output" = ?, "error" = ?, "started_at" = coalesce("task_executions"."started_at", ?), "completed_at" = ?, "updated_at" = ?
  where ("task_executions"."id" = ? and "task_executions"."lease_owner" = ? and "task_executions"."attempt" = ? and "task_executions"."status" = 'running')
  returning "task_id";

-- finish/finishTasks#2
update "task_executions"
  set "status" = CASE WHEN "task_executions"."pending_deps" = 1 AND "task_executions"."status" = 'not_started' THEN 'ready' ELSE "task_executions"."status" END, "pending_deps" = "task_executions"."pending_deps" - 1, "available_at" = CASE WHEN "task_executions"."pending_deps" = 1 AND "task_executions"."status" = 'not_started' THEN ? + "task_executions"."delay_ms" ELSE "task_executions"."available_at" END, "updated_at" = ?
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."pending_deps" > 0 and "task_executions"."task_id" IN (SELECT value FROM json_each(?)))
  returning "status", "pending_deps";

-- finish/finishTasks#3
update "pipeline_executions"
  set "remaining_tasks" = "pipeline_executions"."remaining_tasks" - 1, "failed_tasks" = "pipeline_executions"."failed_tasks" + ?, "error" = coalesce("pipeline_executions"."error", ?), "updated_at" = ?
  where "pipeline_executions"."id" = ?
  returning "remaining_tasks";

-- finish/finishTasks#4
update "pipeline_executions"
  set "status" = CASE WHEN "pipeline_executions"."failed_tasks" > 0 THEN 'failed' ELSE 'completed' END, "completed_at" = ?, "updated_at" = ?
  where ("pipeline_executions"."id" = ? and "pipeline_executions"."remaining_tasks" <= 0 and "pipeline_executions"."status" IN ('pending', 'running', 'paused'))
  returning "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at";

-- maps/parkMapTask
update "task_executions"
  set "pending_deps" = ?, "lease_owner" = ?, "lease_expires_at" = ?, "started_at" = coalesce("task_executions"."started_at", ?), "updated_at" = ?
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."task_id" = ? and "task_executions"."status" = 'running' and "task_executions"."lease_owner" = ? and "task_executions"."attempt" = ?)
  returning "workflow_name", "position", "priority";

-- maps/insertInstances
insert into "task_executions" ("id", "pipeline_execution_id", "workflow_name", "task_id", "position", "status", "attempt", "failed_attempts", "pending_deps", "available_at", "wait_signal", "waits_until", "map_of", "map_index", "map_item", "delay_ms", "priority", "lease_owner", "lease_expires_at", "runner_id", "attempt_history", "output", "error", "started_at", "completed_at", "updated_at")
  values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, null, null, ?, ?, ?, ?, ?, null, null, null, null, null, null, null, null, ?);

-- maps/countDownMapTask
update "task_executions"
  set "pending_deps" = "task_executions"."pending_deps" - ?, "updated_at" = ?
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."task_id" = ? and "task_executions"."status" = 'running' and "task_executions"."lease_owner" = ?)
  returning "id", "attempt", "pending_deps";

-- maps/selectMapInstances
select "id", "pipeline_execution_id", "workflow_name", "task_id", "position", "status", "attempt", "failed_attempts", "pending_deps", "available_at", "waits_until", "map_of", "map_index", "map_item", "lease_owner", "lease_expires_at", "runner_id", "attempt_history", "output", "error", "started_at", "completed_at"
  from "task_executions"
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."map_of" = ?)
  order by "task_executions"."map_index" asc;

-- maps/selectMapInstancePage
select "id", "pipeline_execution_id", "workflow_name", "task_id", "position", "status", "attempt", "failed_attempts", "pending_deps", "available_at", "waits_until", "map_of", "map_index", "map_item", "lease_owner", "lease_expires_at", "runner_id", "attempt_history", "output", "error", "started_at", "completed_at"
  from "task_executions"
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."map_of" = ?)
  order by "task_executions"."map_index" asc
  limit ?
  offset ?;

-- maps/cancelMapInstances
update "task_executions"
  set "status" = ?, "lease_owner" = ?, "lease_expires_at" = ?, "completed_at" = ?, "updated_at" = ?
  where (("task_executions"."pipeline_execution_id" = ? and "task_executions"."map_of" = ?) and "task_executions"."status" NOT IN ('completed', 'failed', 'skipped', 'cancelled'));

-- maps/countMapInstancesOf
select "map_of", count(*), count(*) FILTER (WHERE "status" = 'completed'), count(*) FILTER (WHERE "status" = 'failed'), count(*) FILTER (WHERE "status" = 'running')
  from "task_executions"
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."map_of" is not null)
  group by "task_executions"."map_of"
  order by min("task_executions"."position");

-- maps/deleteMapInstances
delete
  from "task_executions"
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."map_of" IN (SELECT "task_executions"."task_id" FROM "task_executions" WHERE "task_executions"."pipeline_execution_id" = ? AND "task_executions"."id" = ?));

-- control/cancelPipelineRow
update "pipeline_executions"
  set "status" = ?, "remaining_tasks" = ?, "error" = coalesce(?, "pipeline_executions"."error"), "completed_at" = ?, "updated_at" = ?
  where ("pipeline_executions"."id" = ? and "pipeline_executions"."status" IN ('pending', 'running', 'paused'))
  returning "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at";

-- control/forgetQueuedSlots
delete
  from "concurrency_slots"
  where ("concurrency_slots"."pipeline_execution_id" = ? and NOT "concurrency_slots"."admitted");

-- control/cancelTasks
update "task_executions"
  set "status" = ?, "lease_owner" = ?, "lease_expires_at" = ?, "completed_at" = ?, "updated_at" = ?
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."status" NOT IN ('completed', 'failed', 'skipped', 'cancelled'));

-- control/pausePipelineRow
update "pipeline_executions"
  set "status" = ?, "pause_reason" = ?, "updated_at" = ?
  where ("pipeline_executions"."id" = ? and "pipeline_executions"."status" IN ('pending', 'running'))
  returning "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at";

-- control/requeueRunningTasks
update "task_executions"
  set "status" = ?, "available_at" = ?, "lease_owner" = ?, "lease_expires_at" = ?, "updated_at" = ?
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."status" = 'running' and "task_executions"."lease_owner" <> ?);

-- control/resumePipeline
update "pipeline_executions"
  set "status" = CASE WHEN "pipeline_executions"."started_at" IS NULL THEN 'pending' ELSE 'running' END, "pause_reason" = ?, "updated_at" = ?
  where ("pipeline_executions"."id" = ? and "pipeline_executions"."status" = 'paused')
  returning "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at";

-- control/retryPipelineRow
update "pipeline_executions"
  set "status" = CASE WHEN "pipeline_executions"."concurrency" IS NULL THEN 'running' ELSE 'pending' END, "remaining_tasks" = ?, "failed_tasks" = ?, "error" = ?, "pause_reason" = ?, "completed_at" = ?, "updated_at" = ?
  where ("pipeline_executions"."id" = ? and "pipeline_executions"."status" IN ('failed', 'cancelled'))
  returning "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at";

-- control/retryTasks
update "task_executions"
  set "status" = ?, "pending_deps" = ?, "available_at" = ? + "task_executions"."delay_ms", "waits_until" = ?, "lease_owner" = ?, "lease_expires_at" = ?, "completed_at" = ?, "updated_at" = ?
  where ("task_executions"."id" = ? and "task_executions"."pipeline_execution_id" = ?);

-- admission/selectQueuedGroupNames
select distinct "group_name"
  from "concurrency_slots"
  where NOT "concurrency_slots"."admitted";

-- admission/countActive#1
delete
  from "concurrency_slots"
  where ("concurrency_slots"."group_name" IN (SELECT value FROM json_each(?)) and "concurrency_slots"."admitted" and "concurrency_slots"."pipeline_execution_id" IN (SELECT "pipeline_executions"."id" FROM "pipeline_executions" WHERE "pipeline_executions"."id" = "concurrency_slots"."pipeline_execution_id"
              AND "pipeline_executions"."status" IN ('completed', 'failed', 'cancelled')));

-- admission/countActive#2
select "group_name", count(*)
  from "concurrency_slots"
  where ("concurrency_slots"."group_name" IN (SELECT value FROM json_each(?)) and "concurrency_slots"."admitted")
  group by "concurrency_slots"."group_name";

-- admission/selectQueued
select "concurrency_slots"."pipeline_execution_id", "concurrency_slots"."slot_limit", "pipeline_executions"."concurrency"
  from "concurrency_slots"
  inner join "pipeline_executions" on "pipeline_executions"."id" = "concurrency_slots"."pipeline_execution_id"
  where ("concurrency_slots"."group_name" = ? and NOT "concurrency_slots"."admitted" and "pipeline_executions"."status" = 'pending')
  order by "concurrency_slots"."priority" desc, "concurrency_slots"."queued_at" asc, "concurrency_slots"."pipeline_execution_id" asc
  limit ?
  offset ?;

-- admission/admitSlots#1
update "concurrency_slots"
  set "admitted" = ?
  where "concurrency_slots"."pipeline_execution_id" IN (SELECT unhex(value) FROM json_each(?));

-- admission/admitSlots#2
update "task_executions"
  set "status" = ?, "available_at" = max("task_executions"."available_at", ? + "task_executions"."delay_ms"), "updated_at" = ?
  where ("task_executions"."pipeline_execution_id" IN (SELECT unhex(value) FROM json_each(?)) and "task_executions"."status" = 'not_started' and "task_executions"."pending_deps" = 0);

-- admission/selectOldestActive
select "concurrency_slots"."pipeline_execution_id"
  from "concurrency_slots"
  inner join "pipeline_executions" on "pipeline_executions"."id" = "concurrency_slots"."pipeline_execution_id"
  where ("concurrency_slots"."group_name" = ? and "concurrency_slots"."admitted" and "pipeline_executions"."status" NOT IN ('completed', 'failed', 'cancelled'))
  order by "concurrency_slots"."queued_at" asc, "concurrency_slots"."pipeline_execution_id" asc
  limit ?;

-- admission/insertSlots
insert into "concurrency_slots" ("group_name", "pipeline_execution_id", "slot_limit", "priority", "queued_at", "admitted")
  values (?, ?, ?, ?, ?, ?)
  on conflict ("concurrency_slots"."group_name", "concurrency_slots"."pipeline_execution_id") do
  update set "slot_limit" = excluded.slot_limit, "queued_at" = excluded.queued_at, "admitted" = ?;

-- admission/selectQueuedGroups
select "queued"."pipeline_execution_id", "queued"."group_name", "queued"."slot_limit", (SELECT count(*) FROM "concurrency_slots" AS a JOIN "pipeline_executions" AS ap ON ap.id = a.pipeline_execution_id
          WHERE a.group_name = "queued"."group_name" AND a.admitted AND ap.status NOT IN ('completed', 'failed', 'cancelled'))
  from "concurrency_slots" "queued"
  inner join "pipeline_executions" on "pipeline_executions"."id" = "queued"."pipeline_execution_id"
  where ("queued"."pipeline_execution_id" IN (SELECT unhex(value) FROM json_each(?)) and NOT "queued"."admitted" and "pipeline_executions"."status" = 'pending');

-- admission/selectGroupOccupancy
select "concurrency_slots"."group_name", "pipeline_executions"."workflow_name", count(*) FILTER (WHERE "concurrency_slots"."admitted"), count(*) FILTER (WHERE NOT "concurrency_slots"."admitted"), max("concurrency_slots"."slot_limit")
  from "concurrency_slots"
  inner join "pipeline_executions" on "pipeline_executions"."id" = "concurrency_slots"."pipeline_execution_id"
  where ("pipeline_executions"."status" NOT IN ('completed', 'failed', 'cancelled') and (? IS NULL OR "pipeline_executions"."workflow_name" = ?))
  group by "pipeline_executions"."workflow_name", "concurrency_slots"."group_name"
  order by "pipeline_executions"."workflow_name" asc, "concurrency_slots"."group_name" asc;

-- buckets/selectHeldLeases
select "attempt"
  from "task_executions"
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."task_id" = ? and "task_executions"."status" = 'running' and "task_executions"."lease_owner" = ? and "task_executions"."attempt" = ?);

-- buckets/deleteExpiredStarts
delete
  from "rate_limit_starts"
  where ("rate_limit_starts"."bucket" = ? and "rate_limit_starts"."expires_at" <= ?);

-- buckets/countStarts
select count(*)
  from "rate_limit_starts"
  where ("rate_limit_starts"."bucket" = ? and "rate_limit_starts"."started_at" > ?);

-- buckets/selectNthStart
select "started_at"
  from "rate_limit_starts"
  where ("rate_limit_starts"."bucket" = ? and "rate_limit_starts"."started_at" > ?)
  order by "rate_limit_starts"."started_at" asc
  limit ?
  offset ?;

-- buckets/insertStarts
insert into "rate_limit_starts" ("bucket", "started_at", "expires_at")
  values (?, ?, ?);

-- buckets/joinHerd
insert into "rate_limit_buckets" ("bucket", "herd_at", "herd_size")
  values (?, ?, ?)
  on conflict ("rate_limit_buckets"."bucket") do
  update set "herd_at" = excluded.herd_at, "herd_size" = CASE WHEN "rate_limit_buckets"."herd_at" = excluded.herd_at THEN "rate_limit_buckets"."herd_size" + excluded.herd_size ELSE excluded.herd_size END
  returning "herd_size" - ?;

-- signals/sendSignal#1
select "status"
  from "pipeline_executions"
  where "pipeline_executions"."id" = ?;

-- signals/sendSignal#2
insert into "signals" ("pipeline_execution_id", "name", "payload", "received_at")
  values (?, ?, ?, ?)
  on conflict do nothing
  returning "name";

-- signals/sendSignal#3
update "task_executions"
  set "available_at" = ?, "updated_at" = ?
  where ("task_executions"."pipeline_execution_id" = ? and "task_executions"."wait_signal" = ? and "task_executions"."status" = 'ready' and "task_executions"."available_at" > ?);

-- signals/selectSignal
select "payload"
  from "signals"
  where ("signals"."pipeline_execution_id" = ? and "signals"."name" = ?);

-- retention/deleteTerminalPipelines
delete
  from "pipeline_executions"
  where "pipeline_executions"."id" in (select "id"
  from "pipeline_executions"
  where ("pipeline_executions"."status" IN ('completed', 'failed', 'cancelled') and "pipeline_executions"."completed_at" < ? and ("pipeline_executions"."scheduled_time" IS NULL OR NOT EXISTS (SELECT 1 FROM "cron_executions" ce
  WHERE ce.id = unhex(replace("pipeline_executions"."idempotency_key", '-', '')) AND ce.status = 'claimed')))
  limit ?);

-- retention/deleteExpiredRateLimitStarts
delete
  from "rate_limit_starts"
  where rowid IN (SELECT rowid FROM "rate_limit_starts" WHERE "rate_limit_starts"."expires_at" < ? LIMIT ?);

-- pipelines/selectPipelines
select "id", "workflow_name", "workflow_version", "status", "input", "idempotency_key", "scheduled_time", "schedule_id", "remaining_tasks", "failed_tasks", "error", "pause_reason", "trace_context", "run_at", "priority", "concurrency", "created_at", "started_at", "completed_at", "updated_at"
  from "pipeline_executions"
  where ("pipeline_executions"."workflow_name" = ? and "pipeline_executions"."status" = ?)
  order by "pipeline_executions"."created_at" desc, "pipeline_executions".rowid DESC
  limit ?;

-- pipelines/countWork
select (SELECT count(*) FROM "task_executions" WHERE "status" = 'ready' AND "available_at" <= ?), (SELECT count(*) FROM "pipeline_executions" WHERE "status" = 'running')
  from (SELECT 1) AS one;
