-- Retention reads the tasks due for purging by definition: a process purges the definitions it
-- runs only, and the tasks of others (another app's, or a definition no process runs any more)
-- would otherwise be read past by every batch, oldest first (114-164 ms a batch behind 300,000).
CREATE INDEX "fanout_task_retention_kind_idx" ON "fanout_task" ("kind", "completed_at") WHERE "purged_at" IS NULL AND "status" IN ('completed', 'failed', 'cancelled');
DROP INDEX IF EXISTS "fanout_task_retention_idx";
