-- A definition's purge hook (`onPurge`) deletes what its app keeps of a task whose details
-- retention (or a delete) removes. Its run is held by one process at a time under a lease with an
-- owner token, as a fan-in's is: only the holder ends the purge, so a run that fails after another
-- process's succeeded cannot leave the app's rows behind. A failed run holds the task back for a
-- while through the same lease.
ALTER TABLE "fanout_task" ADD COLUMN "purge_token" UUID;
ALTER TABLE "fanout_task" ADD COLUMN "purge_lease_until" TIMESTAMPTZ(3);
