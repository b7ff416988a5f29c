-- Fanout: tasks, items and global limit slots.

-- CreateTable
CREATE TABLE "fanout_task" (
    "id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "tenant" TEXT,
    "input" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "stop_reason" TEXT,
    "error" TEXT,
    "total" INTEGER NOT NULL DEFAULT 0,
    "succeeded" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "cancelled" INTEGER NOT NULL DEFAULT 0,
    "round" INTEGER NOT NULL DEFAULT 1,
    "max_attempts" INTEGER NOT NULL DEFAULT 4,
    "max_failures" INTEGER,
    "max_failure_ratio" DOUBLE PRECISION,
    "deadline_at" TIMESTAMPTZ(3),
    "dispatched_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "fanin_round" INTEGER NOT NULL DEFAULT 0,
    "fanin_lease_until" TIMESTAMPTZ(3),

    CONSTRAINT "fanout_task_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "fanout_item" (
    "id" UUID NOT NULL,
    "task_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "key" TEXT NOT NULL,
    "snapshot" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "claim_token" UUID,
    "lease_until" TIMESTAMPTZ(3),
    "result" JSONB,
    "error" JSONB,
    "round" INTEGER NOT NULL DEFAULT 1,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "fanout_item_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "fanout_slot" (
    "name" TEXT NOT NULL,
    "slot" INTEGER NOT NULL,
    "holder" UUID,
    "available_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "fanout_slot_pkey" PRIMARY KEY ("name","slot")
);

-- CreateIndex
CREATE INDEX "fanout_task_status_idx" ON "fanout_task"("status");

-- CreateIndex
CREATE INDEX "fanout_task_tenant_created_at_idx" ON "fanout_task"("tenant", "created_at");

-- CreateIndex
CREATE INDEX "fanout_item_task_id_seq_idx" ON "fanout_item"("task_id", "seq");

-- CreateIndex
CREATE UNIQUE INDEX "fanout_item_task_id_key_key" ON "fanout_item"("task_id", "key");

-- Items are updated in place two or three times (claim, lease renewals, settle) and tasks on
-- every settle; free room in each page lets those updates be HOT (no index writes, no new page).
ALTER TABLE "fanout_item" SET (fillfactor = 30);
ALTER TABLE "fanout_task" SET (fillfactor = 50);

-- AddForeignKey
ALTER TABLE "fanout_item" ADD CONSTRAINT "fanout_item_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "fanout_task"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The status a task moves to once its counters say every dispatched item is settled: the one
-- rule for "last child wins", shared by every statement that moves counters.
CREATE FUNCTION "fanout_next_status"("status" TEXT, "stop_reason" TEXT, "dispatched" BOOLEAN, "settled" INTEGER, "total" INTEGER)
RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN "status" IN ('running', 'stopping') AND "dispatched" AND "settled" >= "total" THEN
      CASE WHEN "stop_reason" = 'cancelled' THEN 'cancelled'
           WHEN "stop_reason" IS NOT NULL THEN 'failed'
           ELSE 'completed' END
    ELSE "status"
  END
$$;
