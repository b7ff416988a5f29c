-- What the operator console needs: task summaries, idempotent submits, archiving, per-round
-- rates, retry times, stored item logs, and the presence and throughput of worker processes.

-- Tasks: the input in a few words, the submit's idempotency key (and a hash of the request it
-- stands for), when it was archived, and where its current round began.
ALTER TABLE "fanout_task"
    ADD COLUMN "summary" TEXT,
    ADD COLUMN "idempotency_key" TEXT,
    ADD COLUMN "request_hash" TEXT,
    ADD COLUMN "archived_at" TIMESTAMPTZ(3),
    ADD COLUMN "round_started_at" TIMESTAMPTZ(3),
    ADD COLUMN "round_settled_at_start" INTEGER NOT NULL DEFAULT 0;

-- One task per key, kind and tenant (a task without a tenant is its own tenant ''). Partial, so
-- tasks submitted without a key never meet the index.
CREATE UNIQUE INDEX "fanout_task_idempotency_key" ON "fanout_task" ("kind", COALESCE("tenant", ''), "idempotency_key")
    WHERE "idempotency_key" IS NOT NULL;

-- Items: when a pending item that failed transiently is due again. Not indexed, like every
-- column a hot update writes (see the init migration).
ALTER TABLE "fanout_item" ADD COLUMN "retry_at" TIMESTAMPTZ(3);

-- The lines a handler logged (`ctx.log`), readable after the fact. Written in batches off the
-- item's path; deleted with their task.
CREATE TABLE "fanout_item_log" (
    "id" BIGINT GENERATED ALWAYS AS IDENTITY,
    "task_id" UUID NOT NULL,
    "item_id" UUID NOT NULL,
    "attempt" INTEGER NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "message" TEXT NOT NULL,
    "data" JSONB,

    CONSTRAINT "fanout_item_log_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "fanout_item_log_item_id_id_idx" ON "fanout_item_log" ("item_id", "id");
CREATE INDEX "fanout_item_log_task_id_idx" ON "fanout_item_log" ("task_id");
ALTER TABLE "fanout_item_log" ADD CONSTRAINT "fanout_item_log_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "fanout_task"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Processes running a Fanout runtime, as they last reported themselves (every few seconds).
CREATE TABLE "fanout_worker" (
    "id" UUID NOT NULL,
    "role" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "kinds" TEXT[] NOT NULL,
    "concurrency" INTEGER NOT NULL,
    "in_flight" INTEGER NOT NULL DEFAULT 0,
    "stats" JSONB NOT NULL DEFAULT '{}',
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "seen_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "fanout_worker_pkey" PRIMARY KEY ("id")
);

-- Items settled per 10-second bucket, process and kind, with a histogram of their durations
-- (counts per bound of `fanout_duration_bounds_ms`): throughput and latency over time.
CREATE TABLE "fanout_metric" (
    "bucket" TIMESTAMPTZ(3) NOT NULL,
    "worker_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "settled" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "durations" INTEGER[] NOT NULL,

    CONSTRAINT "fanout_metric_pkey" PRIMARY KEY ("bucket", "worker_id", "kind")
);
