-- index/heartbeat
insert into "tenant"."runners" ("id", "hostname", "pid", "workflows", "started_at", "heartbeat_at", "stopped_at")
  values ($1::text, $2::text, $3::integer, $4::jsonb, $5::timestamp (3) with time zone, $6::timestamp (3) with time zone, default)
  on conflict ("id") do
  update set "hostname" = excluded.hostname, "pid" = excluded.pid, "workflows" = excluded.workflows, "started_at" = excluded.started_at, "heartbeat_at" = excluded.heartbeat_at, "stopped_at" = $7;

-- index/markStopped
update "tenant"."runners"
  set "stopped_at" = $1::timestamp (3) with time zone
  where "tenant"."runners"."id" = $2::text;

-- index/deleteSilentRunners
delete
  from "tenant"."runners"
  where "tenant"."runners"."id" in (select "id"
  from "tenant"."runners"
  where "tenant"."runners"."heartbeat_at" < $1::timestamp (3) with time zone
  limit $2
  for update skip locked);

-- index/selectRunners
select "id", "hostname", "pid", "workflows", "started_at", "heartbeat_at", "stopped_at"
  from "tenant"."runners"
  order by "tenant"."runners"."started_at" asc, "tenant"."runners"."id" asc;

-- index/selectDatabaseNow
select to_json(now()) #>> '{}'
  from (SELECT 1) AS one;
