-- Failure tolerance decided by the same statements that move the counters: a settle (or the end
-- of a dispatch) that takes a task past what it tolerates also stops it, and if that was the
-- last item, the task ends failed, not completed.

-- Whether a task's failures passed its tolerance (the ratio only counts once the total is final).
CREATE FUNCTION "fanout_over_limit"("failed" INTEGER, "total" INTEGER, "dispatched" BOOLEAN, "max_failures" INTEGER, "max_failure_ratio" DOUBLE PRECISION)
RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $$
  SELECT ("max_failures" IS NOT NULL AND "failed" > "max_failures")
      OR ("max_failure_ratio" IS NOT NULL AND "dispatched" AND "total" > 0 AND "failed" > "max_failure_ratio" * "total")
$$;

-- The stop reason after the counters moved: the one it had, or the failure threshold.
CREATE FUNCTION "fanout_next_stop_reason"("stop_reason" TEXT, "over_limit" BOOLEAN)
RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
  SELECT COALESCE("stop_reason", CASE WHEN "over_limit" THEN 'failure_threshold' END)
$$;

-- The status after the counters moved, failure tolerance included.
CREATE FUNCTION "fanout_next_status"("status" TEXT, "stop_reason" TEXT, "dispatched" BOOLEAN, "settled" INTEGER, "total" INTEGER, "over_limit" BOOLEAN)
RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
  SELECT "fanout_next_status"(
    CASE WHEN "status" = 'running' AND "over_limit" THEN 'stopping' ELSE "status" END,
    "fanout_next_stop_reason"("stop_reason", "over_limit"),
    "dispatched", "settled", "total")
$$;
