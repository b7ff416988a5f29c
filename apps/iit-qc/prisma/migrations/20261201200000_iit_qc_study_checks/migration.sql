-- The outcome of a run's study-level checks when they ran while its children did (the rules that
-- failed, with the reason): the fan-in then keeps their findings instead of running them itself.
ALTER TABLE "qc_run" ADD COLUMN "study_checks" JSONB;
