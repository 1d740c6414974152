-- index/heartbeat
insert into "runners" ("id", "hostname", "pid", "workflows", "started_at", "heartbeat_at", "stopped_at")
  values (?, ?, ?, ?, ?, ?, null)
  on conflict ("runners"."id") do
  update set "hostname" = excluded.hostname, "pid" = excluded.pid, "workflows" = excluded.workflows, "started_at" = excluded.started_at, "heartbeat_at" = excluded.heartbeat_at, "stopped_at" = ?;

-- index/markStopped
update "runners"
  set "stopped_at" = ?
  where "runners"."id" = ?;

-- index/deleteSilentRunners
delete
  from "runners"
  where "runners"."id" in (select "id"
  from "runners"
  where "runners"."heartbeat_at" < ?
  limit ?);

-- index/selectRunners
select "id", "hostname", "pid", "workflows", "started_at", "heartbeat_at", "stopped_at"
  from "runners"
  order by "runners"."started_at" asc, "runners"."id" asc;
