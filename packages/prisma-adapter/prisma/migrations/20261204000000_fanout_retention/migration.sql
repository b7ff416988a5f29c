-- Retention, in step with what it promises, and the maintenance loop's look for pending fan-ins.
--
-- A task's details (its items and their log lines) are deleted in batches. A large task takes
-- several, and until this migration its `purged_at` was set by the last one: in between, the API
-- served what was left (counts and items half gone). The task is now marked purged by the first
-- batch, and `purging` keeps it in hand until the last, so its details answer as gone from the start.
ALTER TABLE "fanout_task" ADD COLUMN "purging" BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX "fanout_task_purging_idx" ON "fanout_task" ("completed_at") WHERE "purging";

-- The maintenance loop looks for finished tasks whose fan-in has not run at every pass, in every
-- process. Without an index it read the whole task table, which retention keeps every row of (the
-- task's counts and times stay): 133 ms a pass at 300,000 finished tasks.
CREATE INDEX "fanout_task_fanin_due_idx" ON "fanout_task" ("completed_at") WHERE "fanin_round" < "round";
