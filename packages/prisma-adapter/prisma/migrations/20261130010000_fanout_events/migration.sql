-- Payloads of task events too large for a NOTIFY (over ~7,900 bytes): the notification carries
-- the row's id and the listener reads the payload back. Rows are deleted after an hour.
CREATE TABLE "fanout_event_payload" (
    "id" BIGSERIAL NOT NULL,
    "task_id" UUID NOT NULL,
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "fanout_event_payload_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "fanout_event_payload_created_at_idx" ON "fanout_event_payload"("created_at");
