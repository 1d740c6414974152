CREATE TABLE "workflows" (
	"name" text NOT NULL,
	"version" text NOT NULL,
	"description" text,
	"tasks" jsonb NOT NULL,
	"registered_at" timestamp (3) with time zone NOT NULL,
	"last_seen_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "workflows_name_version_pk" PRIMARY KEY("name","version")
);
