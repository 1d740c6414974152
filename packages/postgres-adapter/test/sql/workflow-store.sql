-- index/list
select "name", "version", "description", "tasks", "concurrency", "priority", "registered_at", "last_seen_at"
  from "tenant"."workflows"
  order by "tenant"."workflows"."name" asc, "tenant"."workflows"."registered_at" asc, "tenant"."workflows"."version" asc;

-- index/latest
select "name", "version", "description", "tasks", "concurrency", "priority", "registered_at", "last_seen_at"
  from "tenant"."workflows"
  where "tenant"."workflows"."name" = $1::text
  order by "tenant"."workflows"."registered_at" desc, "tenant"."workflows"."version" desc
  limit $2;
