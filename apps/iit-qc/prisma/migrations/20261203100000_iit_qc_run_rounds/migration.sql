-- The round of the run's task whose fan-in settled it last: a child's save of that round or an
-- earlier one, arriving after it (a worker that lost its lease and went on), stores nothing.
ALTER TABLE "qc_run" ADD COLUMN "settled_round" INTEGER NOT NULL DEFAULT 0;
-- Every subject checked, every child succeeded: only such a run is a later run's baseline.
ALTER TABLE "qc_run" ADD COLUMN "complete" BOOLEAN NOT NULL DEFAULT false;
UPDATE "qc_run" SET "settled_round" = 1, "complete" = true WHERE "stage" = 'done';

-- The subjects a run's children checked (saved), so that a run cut short (cancelled, failed
-- children) resolves only the discrepancies of subjects it checked.
CREATE TABLE "qc_run_subject" (
    "run_id" UUID NOT NULL,
    "subject" TEXT NOT NULL,
    CONSTRAINT "qc_run_subject_pkey" PRIMARY KEY ("run_id", "subject")
);

-- A rule result's level (study, subject, record): what a run checked is read from its results.
ALTER TABLE "qc_rule_result" ADD COLUMN "level" TEXT;
