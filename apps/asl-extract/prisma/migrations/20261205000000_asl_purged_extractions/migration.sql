-- Extractions of tasks whose details retention or a delete removed before the app had its purge
-- hook (`onPurge`): nothing reads them (the results are read through the task's items), and
-- nothing else would delete them. From this version on, the hook deletes them with their task's items.
DELETE FROM "asl_extraction" e
WHERE NOT EXISTS (SELECT 1 FROM "fanout_task" t WHERE t."id" = e."task_id" AND t."purged_at" IS NULL);
