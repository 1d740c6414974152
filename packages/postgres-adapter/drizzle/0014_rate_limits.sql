CREATE TABLE "rate_limit_buckets" (
	"bucket" text PRIMARY KEY NOT NULL,
	"herd_at" timestamp (3) with time zone NOT NULL,
	"herd_size" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rate_limit_starts" (
	"bucket" text NOT NULL,
	"started_at" timestamp (3) with time zone NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "rate_limit_starts_bucket_idx" ON "rate_limit_starts" USING btree ("bucket","started_at");