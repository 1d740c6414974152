-- schedules/insertSchedule
insert into "cron_schedules" ("id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at")
  values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  on conflict do nothing
  returning "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at";

-- schedules/insertScheduleChunk
insert into "cron_schedules" ("id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at")
  values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  on conflict do nothing;

-- schedules/selectSchedule
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "cron_schedules"
  where "cron_schedules"."id" = ?;

-- schedules/selectScheduleByName
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "cron_schedules"
  where "cron_schedules"."name" = ?;

-- schedules/deleteSchedule
delete
  from "cron_schedules"
  where "cron_schedules"."id" = ?;

-- schedules/deleteScheduleAtVersion
delete
  from "cron_schedules"
  where ("cron_schedules"."id" = ? and "cron_schedules"."version" = ?);

-- probe/selectTickProbe
select (select "next_run_at"
  from "cron_schedules"
  where ("cron_schedules"."enabled" = 1 and "cron_schedules"."next_run_at" <= ? and "cron_schedules"."workflow_name" IN (SELECT value FROM json_each(?)))
  order by "cron_schedules"."next_run_at" asc
  limit ?), EXISTS (select "id"
  from "cron_executions"
  where "cron_executions"."status" = 'buffered'
  limit ?)
  from (VALUES (1)) AS probe;

-- claim/selectDueSchedules
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "cron_schedules"
  where ("cron_schedules"."enabled" = 1 and "cron_schedules"."next_run_at" <= ? and "cron_schedules"."workflow_name" IN (SELECT value FROM json_each(?)))
  order by "cron_schedules"."next_run_at" asc
  limit ?;

-- claim/selectActiveSchedules#1
select EXISTS (SELECT 1 FROM "cron_executions" ce
            WHERE ce.status = 'claimed' AND +ce.schedule_id = ?)
          OR EXISTS (SELECT 1 FROM "pipeline_executions" pe
            CROSS JOIN "cron_executions" ce ON ce.id = unhex(replace(pe.idempotency_key, '-', ''))
            WHERE pe.status IN ('pending', 'running', 'paused') AND pe.scheduled_time IS NOT NULL
              AND +ce.schedule_id = ? AND ce.status = 'handed_off'
              AND ce.pipeline_execution_id = pe.id)
  from "cron_schedules"
  where "cron_schedules"."id" = ?;

-- claim/selectActiveSchedules#2
select "id"
  from "cron_executions"
  where ("cron_executions"."schedule_id" = ? and "cron_executions"."status" = 'buffered')
  limit ?;

-- claim/selectActivePipelines
select "pipeline_executions"."id"
  from "cron_executions"
  inner join "pipeline_executions" on "pipeline_executions"."id" = "cron_executions"."pipeline_execution_id"
  where ("cron_executions"."schedule_id" = ? and "cron_executions"."status" = 'handed_off' and "pipeline_executions"."status" IN ('pending', 'running', 'paused'));

-- claim/skipClaimedRows
update "cron_executions"
  set "status" = ?
  where ("cron_executions"."status" = 'claimed' and +"cron_executions"."schedule_id" = ? and "cron_executions"."source" IN ('schedule', 'catchup'))
  returning "id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason";

-- claim/selectLatestPipelines
select "id", "status", "completed_at"
  from "pipeline_executions"
  where "pipeline_executions"."schedule_id" = ?
  order by "pipeline_executions"."created_at" desc
  limit ?;

-- claim/skipBufferedRows
update "cron_executions"
  set "status" = ?
  where ("cron_executions"."schedule_id" = ? and "cron_executions"."status" = 'buffered');

-- claim/selectTakenSlots
select "scheduled_time"
  from "cron_executions"
  where ("cron_executions"."schedule_id" = ? and "cron_executions"."scheduled_time" >= ? and "cron_executions"."scheduled_time" < ? and "cron_executions"."source" <> 'manual')
  order by "cron_executions"."scheduled_time" asc;

-- claim/advanceNextRunAt
update "cron_schedules"
  set "enabled" = CASE WHEN ? IS NULL THEN "cron_schedules"."enabled" ELSE 0 END, "run_count" = ?, "note" = coalesce(?, "cron_schedules"."note"), "next_run_at" = ?, "last_run_at" = ?, "version" = "cron_schedules"."version" + 1, "updated_at" = ?
  where ("cron_schedules"."id" = ? and "cron_schedules"."version" = ?);

-- buffer/selectBufferingSchedules
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "cron_schedules"
  where ("cron_schedules"."id" IN (SELECT ce.schedule_id FROM "cron_executions" ce WHERE ce.status = 'buffered') and "cron_schedules"."workflow_name" IN (SELECT value FROM json_each(?)))
  order by "cron_schedules"."id" asc
  limit ?;

-- buffer/selectOldestBuffered
select "id"
  from "cron_executions"
  where ("cron_executions"."schedule_id" = ? and "cron_executions"."status" = 'buffered')
  order by "cron_executions"."scheduled_time" asc
  limit ?;

-- buffer/claimBufferedRow
update "cron_executions"
  set "fire_at" = ?, "claimed_at" = ?, "claimed_by" = ?, "status" = ?
  where ("cron_executions"."id" = ? and "cron_executions"."status" = 'buffered')
  returning "id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason";

-- buffer/countReleasedRun#1
update "cron_schedules"
  set "run_count" = "cron_schedules"."run_count" + 1, "version" = "cron_schedules"."version" + 1, "updated_at" = ?
  where "cron_schedules"."id" = ?;

-- buffer/countReleasedRun#2
update "cron_schedules"
  set "enabled" = ?, "note" = ?, "next_run_at" = ?
  where "cron_schedules"."id" = ?;

-- handoff/linkOccurrence
update "cron_executions"
  set "status" = ?, "pipeline_execution_id" = ?, "handed_off_at" = ?, "recovery_lease_owner" = ?, "recovery_lease_expires_at" = ?
  where ("cron_executions"."id" = ? and "cron_executions"."status" = 'claimed');

-- handoff/relinkOccurrences
update "cron_executions"
  set "pipeline_execution_id" = ?
  where ("cron_executions"."id" = ? and "cron_executions"."status" = 'handed_off');

-- backfill/reclaimForBackfill
update "cron_executions"
  set "workflow_name" = ?, "context" = ?, "fire_at" = ?, "claimed_at" = ?, "claimed_by" = ?, "status" = ?, "source" = ?, "missed_count" = ?, "recovery_attempts" = ?, "next_recovery_at" = ?, "recovery_lease_owner" = ?, "recovery_lease_expires_at" = ?, "abandon_reason" = ?
  where ("cron_executions"."schedule_id" = ? and "cron_executions"."scheduled_time" = ? and "cron_executions"."status" IN ('missed', 'abandoned') and "cron_executions"."pipeline_execution_id" is null and "cron_executions"."source" <> 'manual')
  returning "id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason";

-- recover/selectOccurrencePipeline
select "id"
  from "pipeline_executions"
  where "pipeline_executions"."idempotency_key" = ?;

-- recover/claimLostOccurrences#1
update "cron_executions"
  set "recovery_attempts" = "cron_executions"."recovery_attempts" + 1, "recovery_lease_owner" = ?, "recovery_lease_expires_at" = ?
  where "cron_executions"."id" in (select "id"
  from "cron_executions"
  where ("cron_executions"."status" = 'claimed' and ("cron_executions"."fire_at" < ? and "cron_executions"."claimed_at" < ?) and ("cron_executions"."next_recovery_at" is null or "cron_executions"."next_recovery_at" <= ?) and ("cron_executions"."recovery_lease_expires_at" is null or "cron_executions"."recovery_lease_expires_at" < ?) and "cron_executions"."workflow_name" IN (SELECT value FROM json_each(?)))
  order by "cron_executions"."fire_at" asc
  limit ?)
  returning "id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason";

-- recover/claimLostOccurrences#2
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "cron_schedules"
  where "cron_schedules"."id" IN (SELECT unhex(value) FROM json_each(?));

-- recover/linkRecovered
update "cron_executions"
  set "status" = ?, "pipeline_execution_id" = ?, "handed_off_at" = ?, "recovered" = ?, "recovery_lease_owner" = ?, "recovery_lease_expires_at" = ?
  where ("cron_executions"."id" = ? and "cron_executions"."recovery_lease_owner" = ? and "cron_executions"."status" = 'claimed');

-- recover/abandonOccurrence
update "cron_executions"
  set "status" = ?, "recovery_lease_owner" = ?, "recovery_lease_expires_at" = ?, "abandon_reason" = ?
  where ("cron_executions"."id" = ? and "cron_executions"."recovery_lease_owner" = ? and "cron_executions"."status" = 'claimed');

-- recover/scheduleRecoveryRetry
update "cron_executions"
  set "recovery_attempts" = "cron_executions"."recovery_attempts" - ?, "next_recovery_at" = ?, "recovery_lease_owner" = ?, "recovery_lease_expires_at" = ?
  where ("cron_executions"."id" = ? and "cron_executions"."recovery_lease_owner" = ? and "cron_executions"."status" = 'claimed');

-- ledger/insertOccurrenceChunk
insert into "cron_executions" ("id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason")
  values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  on conflict do nothing;

-- ledger/selectOccurrence
select "id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason"
  from "cron_executions"
  where "cron_executions"."id" = ?;

-- ledger/selectOccurrencesOfSchedule
select "id", "schedule_id", "workflow_name", "context", "scheduled_time", "fire_at", "claimed_at", "claimed_by", "status", "source", "missed_count", "pipeline_execution_id", "handed_off_at", "recovery_attempts", "recovered", "next_recovery_at", "recovery_lease_owner", "recovery_lease_expires_at", "abandon_reason"
  from "cron_executions"
  where "cron_executions"."schedule_id" = ?
  order by "cron_executions"."scheduled_time" desc, "cron_executions"."claimed_at" desc
  limit ?
  offset ?;

-- ledger/countAbandonedOccurrences
select count(*)
  from "cron_executions"
  where "cron_executions"."status" = 'abandoned';

-- ledger/countLostOccurrences
select count(*)
  from "cron_executions"
  where ("cron_executions"."status" = 'claimed' and ("cron_executions"."fire_at" < ? and "cron_executions"."claimed_at" < ?));

-- ledger/selectOccurrenceStats#1
select count(*), coalesce(sum("status" = 'handed_off'), 0), coalesce(sum("cron_executions"."status" = 'claimed' AND ("cron_executions"."fire_at" < ? and "cron_executions"."claimed_at" < ?)), 0), coalesce(sum("status" = 'skipped'), 0), coalesce(sum("status" = 'missed'), 0), coalesce(sum("status" = 'abandoned'), 0), coalesce(sum("cron_executions"."status" = 'handed_off' AND "cron_executions"."source" IN ('schedule', 'catchup')), 0), avg(CASE WHEN "cron_executions"."status" = 'handed_off' AND "cron_executions"."source" IN ('schedule', 'catchup') THEN "handed_off_at" - "scheduled_time" END)
  from "cron_executions"
  where "cron_executions"."scheduled_time" >= ?;

-- ledger/selectOccurrenceStats#2
select "handed_off_at" - "scheduled_time"
  from "cron_executions"
  where ("cron_executions"."scheduled_time" >= ? and "cron_executions"."status" = 'handed_off' AND "cron_executions"."source" IN ('schedule', 'catchup'))
  order by "cron_executions"."handed_off_at" - "cron_executions"."scheduled_time"
  limit ?
  offset ?;

-- ledger/selectRecoveryCounts
select coalesce(sum("recovery_attempts"), 0), coalesce(sum("recovered"), 0), coalesce(sum("status" = 'abandoned' AND "recovery_attempts" > 0), 0)
  from "cron_executions";

-- ledger/deleteTerminalOccurrences
delete
  from "cron_executions"
  where "cron_executions"."id" in (select "id"
  from "cron_executions"
  where ("cron_executions"."status" NOT IN ('claimed', 'buffered') and coalesce("cron_executions"."handed_off_at", "cron_executions"."claimed_at") < ? and NOT EXISTS (SELECT 1 FROM "pipeline_executions" pe
  WHERE pe.id = "cron_executions"."pipeline_execution_id" AND pe.status IN ('pending', 'running', 'paused')))
  limit ?);

-- trigger/lockSchedule
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "cron_schedules"
  where "cron_schedules"."id" = ?;

-- schedules/selectSchedules
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "cron_schedules"
  where ("cron_schedules"."enabled" = 1 and "cron_schedules"."workflow_name" = ?)
  order by "cron_schedules"."created_at" asc, "cron_schedules".rowid
  limit ?;

-- schedules/updateScheduleVersion
update "cron_schedules"
  set "enabled" = ?, "version" = "cron_schedules"."version" + 1, "updated_at" = ?
  where ("cron_schedules"."id" = ? and "cron_schedules"."version" = ?)
  returning "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at";

-- schedules/updateScheduleGroup
update "cron_schedules"
  set "enabled" = v.value ->> 2, "next_run_at" = v.value ->> 3, "version" = "cron_schedules"."version" + 1
  from json_each(?) AS v
  where ("cron_schedules"."id" = unhex(v.value ->> 0) and "cron_schedules"."version" = v.value ->> 1);

-- schedules/selectStrandedSchedules
select "id", "name", "workflow_name", "cron_expression", "timezone", "enabled", "context", "catchup_policy", "overlap_policy", "jitter_ms", "pause_on_failure", "enabled_at", "max_runs", "run_count", "dst", "note", "start_at", "end_at", "next_run_at", "last_run_at", "version", "created_at", "updated_at"
  from "cron_schedules"
  where ("cron_schedules"."enabled" = 1 and "cron_schedules"."next_run_at" <= ? and "cron_schedules"."workflow_name" not in (?))
  order by "cron_schedules"."next_run_at" asc
  limit ?;
