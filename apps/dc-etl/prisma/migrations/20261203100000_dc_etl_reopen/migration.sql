-- A load failed because some of its chunks failed (not cancelled, not over a threshold): the round
-- of the task that failed it. A retry of the failed chunks (a later round) opens the load again,
-- so the fan-in checks and publishes it once every chunk is in; null when it cannot be retried.
ALTER TABLE etl_load ADD COLUMN failed_round integer;
