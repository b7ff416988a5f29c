-- Promises kept under crashes: the fan-in is fenced by an owner token (only the process holding
-- the lease completes it, and it renews the lease while the hook runs), and a task's ending is
-- announced at least once per round: `announced_round` records the last round whose ending was
-- delivered, and the maintenance loop announces again an ending that was not (its process died
-- between the commit and the announcement, or the broadcast failed).
ALTER TABLE "fanout_task"
    ADD COLUMN "fanin_token" UUID,
    ADD COLUMN "announced_round" INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN "announce_lease_until" TIMESTAMPTZ(3),
    -- The dispatch ended before the listing did (the task stopped, or its manager failed): its
    -- items were never all listed, so retry-failed refuses it (it is submitted again).
    ADD COLUMN "dispatch_cut" BOOLEAN NOT NULL DEFAULT false;

-- Before this migration a failed manager was the only way to cut a dispatch short.
UPDATE "fanout_task" SET "dispatch_cut" = true WHERE "stop_reason" = 'manager_failed';

-- Tasks that ended before this migration were announced when they ended.
UPDATE "fanout_task" SET "announced_round" = "round" WHERE "status" IN ('completed', 'failed', 'cancelled');

-- The maintenance loop looks for unannounced endings every few seconds: only those rows are indexed
-- (settles never change the columns this index reads, so they stay HOT updates).
CREATE INDEX "fanout_task_unannounced_idx" ON "fanout_task" ("completed_at") WHERE "announced_round" < "round";
