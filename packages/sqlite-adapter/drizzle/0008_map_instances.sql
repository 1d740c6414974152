-- Map tasks: one task row per item (an instance), naming its map task, its index and its item
-- (see core's map.ts). Null on every other row.
ALTER TABLE `task_executions` ADD `map_of` text;--> statement-breakpoint
ALTER TABLE `task_executions` ADD `map_index` integer;--> statement-breakpoint
ALTER TABLE `task_executions` ADD `map_item` text;