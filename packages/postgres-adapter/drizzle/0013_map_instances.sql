-- Map tasks: one task row per item (an instance), naming its map task, its index and its item
-- (see core's map.ts). Null on every other row; no index: instances are reached through their
-- pipeline (the primary key's prefix), as its other tasks are.
ALTER TABLE "task_executions" ADD COLUMN "map_of" text;--> statement-breakpoint
ALTER TABLE "task_executions" ADD COLUMN "map_index" integer;--> statement-breakpoint
ALTER TABLE "task_executions" ADD COLUMN "map_item" jsonb;