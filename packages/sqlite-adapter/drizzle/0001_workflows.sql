CREATE TABLE `workflows` (
	`name` text NOT NULL,
	`version` text NOT NULL,
	`description` text,
	`tasks` text NOT NULL,
	`registered_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	PRIMARY KEY(`name`, `version`)
);
