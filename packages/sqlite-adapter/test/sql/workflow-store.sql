-- index/list
select "name", "version", "description", "tasks", "concurrency", "priority", "registered_at", "last_seen_at"
  from "workflows"
  order by "workflows"."name" asc, "workflows"."registered_at" asc, "workflows"."version" asc;

-- index/latest
select "name", "version", "description", "tasks", "concurrency", "priority", "registered_at", "last_seen_at"
  from "workflows"
  where "workflows"."name" = ?
  order by "workflows"."registered_at" desc, "workflows"."version" desc
  limit ?;
