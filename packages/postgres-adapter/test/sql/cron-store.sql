-- schedules/insertSchedule
insert into "tenant"."cron_schedules" ("id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at")
  values ($1::uuid, $2::text, $3::text, $4::text, $5::text, $6::boolean, $7::jsonb, $8::text, $9::text, $10::integer, $11::boolean, $12::timestamp (3) with time zone, $13::integer, $14::integer, $15::jsonb, $16::text, $17::timestamp (3) with time zone, $18::timestamp (3) with time zone, $19::timestamp (3) with time zone, $20::timestamp (3) with time zone, $21::integer, $22::timestamp (3) with time zone, $23::timestamp (3) with time zone)
  on conflict do nothing
  returning "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at";

-- schedules/selectSchedule
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "tenant"."cron_schedules"
  where "tenant"."cron_schedules"."id" = $1::uuid;

-- schedules/selectScheduleByName
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "tenant"."cron_schedules"
  where "tenant"."cron_schedules"."name" = $1::text;

-- schedules/deleteSchedule
with "skipped_buffered" as (update "tenant"."cron_executions"
  set "status" = $1
  where ("tenant"."cron_executions"."schedule_id" = $2::uuid and "tenant"."cron_executions"."status" = 'buffered')
  returning "id")
  delete from "tenant"."cron_schedules"
  where "tenant"."cron_schedules"."id" = $3::uuid;

-- probe/selectTickProbe
select (select "next_run_at"
  from "tenant"."cron_schedules"
  where ("tenant"."cron_schedules"."enabled" and "tenant"."cron_schedules"."next_run_at" <= $1::timestamp (3) with time zone and coalesce("tenant"."cron_schedules"."workflow_name" = ANY($2::text[]), false))
  order by "tenant"."cron_schedules"."next_run_at" asc
  limit $3), EXISTS (select "id"
  from "tenant"."cron_executions"
  where "tenant"."cron_executions"."status" = 'buffered'
  limit $4)
  from (VALUES (1)) AS probe (one);

-- handoff/linkOccurrence
update "tenant"."cron_executions"
  set "status" = $1, "pipeline_execution_id" = $2::uuid, "handed_off_at" = $3::timestamp (3) with time zone, "recovery_lease_owner" = $4, "recovery_lease_expires_at" = $5
  where ("tenant"."cron_executions"."id" = $6::uuid and "tenant"."cron_executions"."status" = 'claimed');

-- recover/selectOccurrencePipeline
select "id"
  from "tenant"."pipeline_executions"
  where "tenant"."pipeline_executions"."idempotency_key" = $1::text;

-- recover/claimLostOccurrences
with "lost" as (update "tenant"."cron_executions"
  set "recovery_attempts" = "tenant"."cron_executions"."recovery_attempts" + 1, "recovery_lease_owner" = $1::text, "recovery_lease_expires_at" = $2::timestamp (3) with time zone
  where "tenant"."cron_executions"."id" in (select "id"
  from "tenant"."cron_executions"
  where ("tenant"."cron_executions"."status" = 'claimed' and ("tenant"."cron_executions"."fire_at" < $3::timestamp (3) with time zone and "tenant"."cron_executions"."claimed_at" < $4::timestamp (3) with time zone) and ("tenant"."cron_executions"."next_recovery_at" is null or "tenant"."cron_executions"."next_recovery_at" <= $5::timestamp (3) with time zone) and ("tenant"."cron_executions"."recovery_lease_expires_at" is null or "tenant"."cron_executions"."recovery_lease_expires_at" < $6::timestamp (3) with time zone) and "tenant"."cron_executions"."workflow_name" = ANY($7::text[]))
  order by "tenant"."cron_executions"."fire_at" asc
  limit $8
  for update skip locked)
  returning "id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason")
  select "lost"."id", "lost"."schedule_id", "lost"."workflow_name", "lost"."context", "lost"."scheduled_time", "lost"."fire_at", "lost"."claimed_at", "lost"."claimed_by", "lost"."status", "lost"."source", "lost"."missed_count", "lost"."pipeline_execution_id", "lost"."handed_off_at", "lost"."recovery_attempts", "lost"."recovered", "lost"."next_recovery_at", "lost"."recovery_lease_owner", "lost"."recovery_lease_expires_at", "lost"."abandon_reason", "tenant"."cron_schedules"."id", "tenant"."cron_schedules"."name", "tenant"."cron_schedules"."workflow_name", "tenant"."cron_schedules"."cron_expression", "tenant"."cron_schedules"."timezone", "tenant"."cron_schedules"."enabled", "tenant"."cron_schedules"."context", "tenant"."cron_schedules"."catchup_policy", "tenant"."cron_schedules"."overlap_policy", "tenant"."cron_schedules"."jitter_ms", "tenant"."cron_schedules"."pause_on_failure", "tenant"."cron_schedules"."enabled_at", "tenant"."cron_schedules"."max_runs", "tenant"."cron_schedules"."run_count", "tenant"."cron_schedules"."dst", "tenant"."cron_schedules"."note", "tenant"."cron_schedules"."start_at", "tenant"."cron_schedules"."end_at", "tenant"."cron_schedules"."next_run_at", "tenant"."cron_schedules"."last_run_at", "tenant"."cron_schedules"."version", "tenant"."cron_schedules"."created_at", "tenant"."cron_schedules"."updated_at"
  from "lost"
  left join "tenant"."cron_schedules" on "tenant"."cron_schedules"."id" = "lost"."schedule_id"
  order by "lost"."fire_at" asc;

-- recover/linkRecovered
update "tenant"."cron_executions"
  set "status" = $1, "pipeline_execution_id" = $2::uuid, "handed_off_at" = $3::timestamp (3) with time zone, "recovered" = $4, "recovery_lease_owner" = $5, "recovery_lease_expires_at" = $6
  where ("tenant"."cron_executions"."id" = $7::uuid and "tenant"."cron_executions"."recovery_lease_owner" = $8::text and "tenant"."cron_executions"."status" = 'claimed');

-- recover/abandonOccurrence
update "tenant"."cron_executions"
  set "status" = $1, "recovery_lease_owner" = $2, "recovery_lease_expires_at" = $3, "abandon_reason" = $4::text
  where ("tenant"."cron_executions"."id" = $5::uuid and "tenant"."cron_executions"."recovery_lease_owner" = $6::text and "tenant"."cron_executions"."status" = 'claimed');

-- recover/scheduleRecoveryRetry
update "tenant"."cron_executions"
  set "recovery_attempts" = "tenant"."cron_executions"."recovery_attempts" - $1::int, "next_recovery_at" = $2::timestamp (3) with time zone, "recovery_lease_owner" = $3, "recovery_lease_expires_at" = $4
  where ("tenant"."cron_executions"."id" = $5::uuid and "tenant"."cron_executions"."recovery_lease_owner" = $6::text and "tenant"."cron_executions"."status" = 'claimed');

-- ledger/selectOccurrence
select "id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason"
  from "tenant"."cron_executions"
  where "tenant"."cron_executions"."id" = $1::uuid;

-- ledger/selectOccurrencesOfSchedule
select "id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason"
  from "tenant"."cron_executions"
  where "tenant"."cron_executions"."schedule_id" = $1::uuid
  order by "tenant"."cron_executions"."scheduled_time" desc, "tenant"."cron_executions"."claimed_at" desc
  limit $2
  offset $3;

-- ledger/countAbandonedOccurrences
select count(*)::int
  from "tenant"."cron_executions"
  where "tenant"."cron_executions"."status" = 'abandoned';

-- ledger/countLostOccurrences
select count(*)::int
  from "tenant"."cron_executions"
  where ("tenant"."cron_executions"."status" = 'claimed' and ("tenant"."cron_executions"."fire_at" < $1::timestamp (3) with time zone and "tenant"."cron_executions"."claimed_at" < $2::timestamp (3) with time zone));

-- ledger/selectOccurrenceStats
select count(*)::int, (count(*) FILTER (WHERE "status" = 'handed_off'))::int, (count(*) FILTER (WHERE "tenant"."cron_executions"."status" = 'claimed' AND ("tenant"."cron_executions"."fire_at" < $1::timestamp (3) with time zone and "tenant"."cron_executions"."claimed_at" < $2::timestamp (3) with time zone)))::int, (count(*) FILTER (WHERE "status" = 'skipped'))::int, (count(*) FILTER (WHERE "status" = 'missed'))::int, (count(*) FILTER (WHERE "status" = 'abandoned'))::int, avg(extract(epoch FROM "tenant"."cron_executions"."handed_off_at" - "tenant"."cron_executions"."scheduled_time") * 1000) FILTER (WHERE "tenant"."cron_executions"."status" = 'handed_off' AND "tenant"."cron_executions"."source" IN ('schedule', 'catchup')), percentile_disc(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM "tenant"."cron_executions"."handed_off_at" - "tenant"."cron_executions"."scheduled_time") * 1000) FILTER (WHERE "tenant"."cron_executions"."status" = 'handed_off' AND "tenant"."cron_executions"."source" IN ('schedule', 'catchup'))
  from "tenant"."cron_executions"
  where "tenant"."cron_executions"."scheduled_time" >= $3::timestamp (3) with time zone;

-- ledger/selectRecoveryCounts
select coalesce(sum("recovery_attempts"), 0), count(*) FILTER (WHERE "recovered"), count(*) FILTER (WHERE "status" = 'abandoned' AND "recovery_attempts" > 0)
  from "tenant"."cron_executions";

-- ledger/deleteTerminalOccurrences
delete
  from "tenant"."cron_executions"
  where "tenant"."cron_executions"."id" in (select "id"
  from "tenant"."cron_executions"
  where ("tenant"."cron_executions"."status" NOT IN ('claimed', 'buffered') and coalesce("tenant"."cron_executions"."handed_off_at", "tenant"."cron_executions"."claimed_at") < $1::timestamp (3) with time zone and NOT EXISTS (SELECT 1 FROM "tenant"."pipeline_executions" pe
  WHERE pe.id = "tenant"."cron_executions"."pipeline_execution_id" AND pe.status IN ('pending', 'running', 'paused')))
  limit $2
  for update skip locked);

-- schedules/selectSchedules
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "tenant"."cron_schedules"
  where ("tenant"."cron_schedules"."enabled" and "tenant"."cron_schedules"."workflow_name" = $1)
  order by "tenant"."cron_schedules"."created_at" asc, "tenant"."cron_schedules"."id" asc
  limit $2;

-- schedules/updateScheduleVersion
update "tenant"."cron_schedules"
  set "enabled" = $1, "version" = "tenant"."cron_schedules"."version" + 1, "updated_at" = $2
  where ("tenant"."cron_schedules"."id" = $3 and "tenant"."cron_schedules"."version" = $4)
  returning "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at";

-- schedules/insertScheduleChunk
insert into "tenant"."cron_schedules" ("id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at")
  select v.c0, v.c1, $1::text, $2::text, $3::text, $4::boolean, $5::jsonb, $6::text, $7::text, $8::integer, $9::boolean, $10::timestamp (3) with time zone, $11::integer, $12::integer, $13::jsonb, $14::text, $15::timestamp (3) with time zone, $16::timestamp (3) with time zone, $17::timestamp (3) with time zone, $18::timestamp (3) with time zone, $19::integer, $20::timestamp (3) with time zone, $21::timestamp (3) with time zone
  from unnest($22::uuid[], $23::text[]) AS v(c0, c1)
  on conflict do nothing;

-- schedules/updateScheduleGroup
update "tenant"."cron_schedules"
  set "enabled" = $1::boolean, "next_run_at" = v.f1, "version" = "tenant"."cron_schedules"."version" + 1
  from unnest($2::uuid[], $3::integer[], $4::timestamp (3) with time zone[]) AS v(id, expected_version, f1)
  where ("tenant"."cron_schedules"."id" = v.id and "tenant"."cron_schedules"."version" = v.expected_version);

-- schedules/deleteScheduleAtVersion
delete
  from "tenant"."cron_schedules"
  where ("tenant"."cron_schedules"."id", "tenant"."cron_schedules"."version") IN (SELECT * FROM unnest($1::uuid[], $2::int[]));

-- schedules/selectStrandedSchedules
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "tenant"."cron_schedules"
  where ("tenant"."cron_schedules"."enabled" and "tenant"."cron_schedules"."next_run_at" <= $1 and "tenant"."cron_schedules"."workflow_name" not in ($2))
  order by "tenant"."cron_schedules"."next_run_at" asc
  limit $3;

-- claim/walkDueIndexInOrder
SET LOCAL enable_bitmapscan = off;

-- claim/selectDueSchedules
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "tenant"."cron_schedules"
  where ("tenant"."cron_schedules"."enabled" and "tenant"."cron_schedules"."next_run_at" <= $1 and coalesce("tenant"."cron_schedules"."workflow_name" = ANY($2::text[]), false))
  order by "tenant"."cron_schedules"."next_run_at" asc
  limit $3
  for no key update skip locked;

-- claim/selectActiveSchedules
SELECT d.id::text AS id
    FROM unnest($1::uuid[]) AS d(id)
    WHERE EXISTS (SELECT 1 FROM "tenant"."cron_executions" ce WHERE ce.status = 'claimed' AND ce.schedule_id = d.id) OR EXISTS (SELECT 1 FROM "tenant"."cron_executions" ce WHERE ce.status = 'buffered' AND ce.schedule_id = d.id)
      OR EXISTS (SELECT 1 FROM "tenant"."pipeline_executions" pe
        JOIN "tenant"."cron_executions" ce ON ce.id = (CASE WHEN pe.idempotency_key
          ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN pe.idempotency_key::uuid END)
        WHERE pe.status IN ('pending', 'running', 'paused') AND pe.scheduled_time IS NOT NULL
          AND ce.schedule_id = d.id AND ce.status = 'handed_off' AND ce.pipeline_execution_id = pe.id);

-- claim/selectActivePipelines
select "tenant"."cron_executions"."schedule_id", "tenant"."pipeline_executions"."id"
  from "tenant"."cron_executions"
  inner join "tenant"."pipeline_executions" on "tenant"."pipeline_executions"."id" = "tenant"."cron_executions"."pipeline_execution_id"
  where ("tenant"."cron_executions"."schedule_id" = ANY($1::uuid[]) and "tenant"."cron_executions"."status" = 'handed_off' and "tenant"."pipeline_executions"."status" IN ('pending', 'running', 'paused'));

-- claim/skipBufferedRows
update "tenant"."cron_executions"
  set "status" = $1
  where ("tenant"."cron_executions"."schedule_id" = ANY($2::uuid[]) and "tenant"."cron_executions"."status" = 'buffered');

-- claim/selectTakenSlots
select "schedule_id", "scheduled_time"
  from "tenant"."cron_executions"
  where ("tenant"."cron_executions"."schedule_id" = ANY($1::uuid[]) and "tenant"."cron_executions"."scheduled_time" >= $2 and "tenant"."cron_executions"."scheduled_time" < $3 and "tenant"."cron_executions"."source" <> 'manual')
  order by "tenant"."cron_executions"."scheduled_time" asc;

-- claim/advanceNextRunAt
update "tenant"."cron_schedules"
  set "enabled" = CASE WHEN v.disable_note IS NULL THEN "tenant"."cron_schedules"."enabled" ELSE false END, "run_count" = v.run_count, "note" = coalesce(v.disable_note, "tenant"."cron_schedules"."note"), "next_run_at" = v.next_run_at, "last_run_at" = v.last_run_at, "version" = "tenant"."cron_schedules"."version" + 1, "updated_at" = $1
  from unnest($2::uuid[],
      $3::int[], $4::timestamptz[],
      $5::timestamptz[],
      $6::int[],
      $7::text[])
      AS v(id, version, next_run_at, last_run_at, run_count, disable_note)
  where ("tenant"."cron_schedules"."id" = v.id and "tenant"."cron_schedules"."version" = v.version)
  returning "tenant"."cron_schedules"."id";

-- claim/skipClaimedRows
update "tenant"."cron_executions"
  set "status" = $1
  where ("tenant"."cron_executions"."schedule_id" = ANY($2::uuid[]) and ("tenant"."cron_executions"."status" = 'claimed' and "tenant"."cron_executions"."source" IN ('schedule', 'catchup')))
  returning "id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason";

-- claim/selectLatestPipelines
select "tenant"."cron_schedules"."id", "latest"."id", "latest"."status", "latest"."completed_at"
  from "tenant"."cron_schedules" cross join lateral (select "id", "status", "completed_at"
  from "tenant"."pipeline_executions"
  where "tenant"."pipeline_executions"."schedule_id" = "tenant"."cron_schedules"."id"
  order by "tenant"."pipeline_executions"."created_at" desc
  limit $1) "latest"
  where "tenant"."cron_schedules"."id" = ANY($2::uuid[]);

-- buffer/selectBufferingSchedules
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "tenant"."cron_schedules"
  where ("tenant"."cron_schedules"."id" IN (SELECT ce.schedule_id FROM "tenant"."cron_executions" ce WHERE ce.status = 'buffered') and "tenant"."cron_schedules"."workflow_name" = ANY($1::text[]))
  order by "tenant"."cron_schedules"."id" asc
  limit $2
  for no key update skip locked;

-- buffer/selectOldestBuffered
select "id"
  from "tenant"."cron_executions"
  where ("tenant"."cron_executions"."schedule_id" = $1 and "tenant"."cron_executions"."status" = 'buffered')
  order by "tenant"."cron_executions"."scheduled_time" asc
  limit $2;

-- buffer/claimBufferedRow
update "tenant"."cron_executions"
  set "fire_at" = $1, "claimed_at" = $2, "claimed_by" = $3, "status" = $4
  where ("tenant"."cron_executions"."id" = $5 and "tenant"."cron_executions"."status" = 'buffered')
  returning "id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason";

-- buffer/countReleasedRun
update "tenant"."cron_schedules"
  set "enabled" = $1, "run_count" = "tenant"."cron_schedules"."run_count" + 1, "note" = $2, "next_run_at" = $3, "version" = "tenant"."cron_schedules"."version" + 1, "updated_at" = $4
  where "tenant"."cron_schedules"."id" = $5;

-- handoff/relinkOccurrences
update "tenant"."cron_executions"
  set "pipeline_execution_id" = v.pipeline_id
  from unnest($1::uuid[],
      $2::uuid[]) AS v(id, pipeline_id)
  where ("tenant"."cron_executions"."id" = v.id and "tenant"."cron_executions"."status" = 'handed_off');

-- backfill/reclaimForBackfill
update "tenant"."cron_executions"
  set "workflow_name" = v.workflow_name, "context" = v.context::jsonb, "fire_at" = v.fire_at, "claimed_at" = v.claimed_at, "claimed_by" = v.claimed_by, "status" = $1, "source" = $2, "missed_count" = $3, "recovery_attempts" = $4, "next_recovery_at" = $5, "recovery_lease_owner" = $6, "recovery_lease_expires_at" = $7, "abandon_reason" = $8
  from unnest($9::uuid[],
      $10::timestamptz[],
      $11::timestamptz[], $12::text[],
      $13::timestamptz[], $14::text[],
      $15::text[])
    AS v(schedule_id, scheduled_time, claimed_at, claimed_by, fire_at, workflow_name, context)
  where ("tenant"."cron_executions"."schedule_id" = v.schedule_id and "tenant"."cron_executions"."scheduled_time" = v.scheduled_time and "tenant"."cron_executions"."status" IN ('missed', 'abandoned') and "tenant"."cron_executions"."pipeline_execution_id" is null and "tenant"."cron_executions"."source" <> 'manual')
  returning "tenant"."cron_executions"."id", "tenant"."cron_executions"."schedule_id", "tenant"."cron_executions"."workflow_name", "tenant"."cron_executions"."context", "tenant"."cron_executions"."scheduled_time", "tenant"."cron_executions"."fire_at", "tenant"."cron_executions"."claimed_at", "tenant"."cron_executions"."claimed_by", "tenant"."cron_executions"."status", "tenant"."cron_executions"."source", "tenant"."cron_executions"."missed_count", "tenant"."cron_executions"."pipeline_execution_id", "tenant"."cron_executions"."handed_off_at", "tenant"."cron_executions"."recovery_attempts", "tenant"."cron_executions"."recovered", "tenant"."cron_executions"."next_recovery_at", "tenant"."cron_executions"."recovery_lease_owner", "tenant"."cron_executions"."recovery_lease_expires_at", "tenant"."cron_executions"."abandon_reason";

-- ledger/insertOccurrenceChunk
insert into "tenant"."cron_executions" ("id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason")
  select v.c0, $1::uuid, $2::text, $3::jsonb, $4::timestamp (3) with time zone, $5::timestamp (3) with time zone, $6::timestamp (3) with time zone, $7::text, $8::text, $9::text, $10::integer, $11::uuid, $12::timestamp (3) with time zone, $13::integer, $14::boolean, $15::timestamp (3) with time zone, $16::text, $17::timestamp (3) with time zone, $18::text
  from unnest($19::uuid[]) AS v(c0)
  on conflict do nothing
  returning "id";

-- trigger/lockSchedule
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "tenant"."cron_schedules"
  where "tenant"."cron_schedules"."id" = $1 for no key update;
