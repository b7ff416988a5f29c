-- Claims and ready items: the item table's updates are HOT again.
--
-- An item is inserted once and updated by its claim and its settle. When no index of the table
-- involves a column such an update changes, PostgreSQL writes the new row version into the same
-- page (the table keeps 70% of each page free for it) and touches no index ("HOT"). The indexes of
-- pending items and of running claims by lease did involve them (status in their predicates, the
-- lease as a key), so every claim and every settle wrote an entry into each of the table's five
-- indexes: on this project's two-core machine the two statements took about twice as long.
--
-- So what those indexes found is now kept in two small tables of its own:
--   fanout_ready  an item that is pending has exactly one row here (its task, its place in the
--                 listing, and when it is due after a retry's delay); a claim deletes the rows it
--                 takes, a release, a lapsed claim's recovery or a retry-failed inserts one again,
--                 a stop deletes its task's.
--   fanout_claim  one row per claim (up to a batch of items) with its token and its lease: a worker
--                 renews a row per claim instead of a row per item, and the maintenance loop finds
--                 lapsed claims in this table, which holds only the claims in flight, whatever the
--                 size of the tasks. The worker forgets a claim once every item of it is settled.

CREATE TABLE "fanout_ready" (
    "task_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "item_id" UUID NOT NULL,
    -- When a retry's delay is over; null: due now.
    "due_at" TIMESTAMPTZ(3),

    CONSTRAINT "fanout_ready_pkey" PRIMARY KEY ("task_id", "seq", "item_id")
);

CREATE TABLE "fanout_claim" (
    "token" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    -- The tenant of the claimed items' tasks ('' for none), for the in-flight quota.
    "tenant" TEXT NOT NULL,
    "item_ids" UUID[] NOT NULL,
    "lease_until" TIMESTAMPTZ(3) NOT NULL,
    "claimed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "fanout_claim_pkey" PRIMARY KEY ("token", "kind", "tenant")
);
CREATE INDEX "fanout_claim_lease_until_idx" ON "fanout_claim" ("lease_until");
CREATE INDEX "fanout_claim_kind_tenant_idx" ON "fanout_claim" ("kind", "tenant");

-- What the old indexes said, carried over: pending items are ready, running ones are claimed
-- under their token with the longest lease any of them had.
INSERT INTO "fanout_ready" ("task_id", "seq", "item_id", "due_at")
SELECT "task_id", "seq", "id", "retry_at" FROM "fanout_item" WHERE "status" = 'pending'
ON CONFLICT DO NOTHING;

INSERT INTO "fanout_claim" ("token", "kind", "tenant", "item_ids", "lease_until")
SELECT i."claim_token", t."kind", COALESCE(t."tenant", ''), array_agg(i."id"), COALESCE(max(i."lease_until"), now())
FROM "fanout_item" i JOIN "fanout_task" t ON t."id" = i."task_id"
WHERE i."status" = 'running' AND i."claim_token" IS NOT NULL
GROUP BY i."claim_token", t."kind", COALESCE(t."tenant", '');

DROP INDEX "fanout_item_pending_idx";
DROP INDEX "fanout_item_running_lease_idx";
ALTER TABLE "fanout_item" DROP COLUMN "lease_until";

-- Both tables churn (a row in and out per item, per claim): vacuum them early.
ALTER TABLE "fanout_ready" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.05);
ALTER TABLE "fanout_claim" SET (autovacuum_vacuum_scale_factor = 0.02);
