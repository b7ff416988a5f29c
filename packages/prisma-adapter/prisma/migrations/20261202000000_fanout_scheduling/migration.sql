-- Scheduling: items are no longer given a job each at dispatch. A task's items wait as rows, and
-- a few jobs per tenant ("tickets") take the next items of the tenant's running tasks in turn, so
-- a small task is not queued behind a large one. These indexes keep every lookup proportional to
-- what it finds, whatever the size of a task.

-- A task's priority among the tasks of its tenant (higher first; equal ones take turns).
ALTER TABLE "fanout_task" ADD COLUMN "priority" INTEGER NOT NULL DEFAULT 0;
-- The trace context of the task's dispatch (when a tracer was registered): its items are claimed
-- later, by jobs that serve a tenant rather than a task, and their spans continue it.
ALTER TABLE "fanout_task" ADD COLUMN "trace" JSONB;
-- When retention deleted the task's items and logs (the task row and its counters stay).
ALTER TABLE "fanout_task" ADD COLUMN "purged_at" TIMESTAMPTZ(3);

-- The next items of a task to claim: only pending rows are in it.
CREATE INDEX "fanout_item_pending_idx" ON "fanout_item" ("task_id", "seq") WHERE "status" = 'pending';
-- Claims whose lease lapsed, found by the maintenance loop without reading a task's other items.
CREATE INDEX "fanout_item_running_lease_idx" ON "fanout_item" ("lease_until") WHERE "status" = 'running';
-- The running tasks of a kind and tenant, in the order they are served.
CREATE INDEX "fanout_task_running_idx" ON "fanout_task" ("kind", (COALESCE("tenant", '')), "priority" DESC, "id") WHERE "status" = 'running';
-- Finished tasks whose details retention has not deleted yet.
CREATE INDEX "fanout_task_retention_idx" ON "fanout_task" ("completed_at") WHERE "purged_at" IS NULL AND "status" IN ('completed', 'failed', 'cancelled');

-- Items and their logs are deleted in bulk by retention: vacuum them sooner than the default 20%.
ALTER TABLE "fanout_item" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.05);
ALTER TABLE "fanout_item_log" SET (autovacuum_vacuum_scale_factor = 0.02);
