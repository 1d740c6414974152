-- Room on each page for the new versions of the rows a job updates: a claim and a finish each write a
-- new version of the task row and of its pipeline row. Kept on the row's own page, the pipeline's
-- updates stay HOT (no index covers the columns they change) and the task's, which indexes must
-- follow, skip the lock record and the full tuple image that moving a version to another page costs.
-- A claim takes a run of consecutive rows (oldest first) in one transaction, so 70 left too little
-- room: on a 5,000-job backlog, WAL per processed job fell from 1,683 to 1,384-1,401 bytes (see
-- bench/README.md). Applies to pages filled from now on; rows already written stay where they are.
ALTER TABLE "pipeline_executions" SET (fillfactor = 40);--> statement-breakpoint
ALTER TABLE "task_executions" SET (fillfactor = 40);
