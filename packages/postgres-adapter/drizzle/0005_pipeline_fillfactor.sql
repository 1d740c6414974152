-- Room on each page for the new versions of a pipeline row (claimed, then finished): no index covers the
-- columns those updates change, so they are HOT updates as long as the page has space for them.
ALTER TABLE "pipeline_executions" SET (fillfactor = 70);
