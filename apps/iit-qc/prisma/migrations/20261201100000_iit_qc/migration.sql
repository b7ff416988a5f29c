-- The trial-data QC app: studies, datasets and their records, rule sets, runs, findings,
-- discrepancies across runs, and queries.
CREATE TABLE "qc_study" (
    "id" UUID NOT NULL,
    "tenant" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "standard" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "qc_study_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "qc_study_tenant_name_key" ON "qc_study"("tenant", "name");

CREATE TABLE "qc_dataset" (
    "id" UUID NOT NULL,
    "study_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "domain" TEXT,
    "format" TEXT NOT NULL,
    "filename" TEXT NOT NULL,
    "sha256" TEXT NOT NULL,
    "bytes" INTEGER NOT NULL,
    "records" INTEGER NOT NULL,
    "columns" JSONB NOT NULL,
    "metadata" JSONB,
    "version" INTEGER NOT NULL,
    "current" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "qc_dataset_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "qc_dataset_study_id_name_version_key" ON "qc_dataset"("study_id", "name", "version");
CREATE INDEX "qc_dataset_study_id_current_idx" ON "qc_dataset"("study_id", "current");

CREATE TABLE "qc_record" (
    "dataset_id" UUID NOT NULL,
    "recno" INTEGER NOT NULL,
    "subject" TEXT,
    "data" JSONB NOT NULL,
    CONSTRAINT "qc_record_pkey" PRIMARY KEY ("dataset_id", "recno")
);
CREATE INDEX "qc_record_subject_dataset_id_idx" ON "qc_record"("subject", "dataset_id");

CREATE TABLE "qc_rule_set" (
    "id" UUID NOT NULL,
    "study_id" UUID NOT NULL,
    "tenant" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "source" TEXT NOT NULL,
    "sha256" TEXT NOT NULL,
    "rules" JSONB NOT NULL,
    "rule_count" INTEGER NOT NULL,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "qc_rule_set_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "qc_rule_set_study_id_name_version_key" ON "qc_rule_set"("study_id", "name", "version");

CREATE TABLE "qc_run" (
    "task_id" UUID NOT NULL,
    "study_id" UUID NOT NULL,
    "tenant" TEXT NOT NULL,
    "rule_set_id" UUID NOT NULL,
    "datasets" JSONB NOT NULL,
    "subjects" INTEGER NOT NULL,
    "previous_run_id" UUID,
    "stage" TEXT NOT NULL,
    "summary" JSONB,
    "report_path" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),
    CONSTRAINT "qc_run_pkey" PRIMARY KEY ("task_id")
);
CREATE INDEX "qc_run_study_id_created_at_idx" ON "qc_run"("study_id", "created_at");

CREATE TABLE "qc_finding" (
    "run_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "rule_id" TEXT NOT NULL,
    "level" TEXT NOT NULL,
    "subject" TEXT,
    "site" TEXT,
    "domain" TEXT,
    "dataset" TEXT,
    "recno" INTEGER,
    "variables" TEXT[],
    "values" TEXT[],
    "message" TEXT NOT NULL,
    "severity" TEXT NOT NULL,
    "change" TEXT,
    "excluded" BOOLEAN NOT NULL DEFAULT false,
    CONSTRAINT "qc_finding_pkey" PRIMARY KEY ("run_id", "key")
);
CREATE INDEX "qc_finding_run_id_rule_id_idx" ON "qc_finding"("run_id", "rule_id");
CREATE INDEX "qc_finding_run_id_subject_idx" ON "qc_finding"("run_id", "subject");

CREATE TABLE "qc_rule_error" (
    "run_id" UUID NOT NULL,
    "subject" TEXT NOT NULL,
    "rule_id" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "message" TEXT NOT NULL,
    CONSTRAINT "qc_rule_error_pkey" PRIMARY KEY ("run_id", "subject", "rule_id")
);

CREATE TABLE "qc_rule_result" (
    "run_id" UUID NOT NULL,
    "rule_id" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "issues" INTEGER NOT NULL,
    "excluded" INTEGER NOT NULL,
    "subjects" INTEGER NOT NULL,
    "errors" INTEGER NOT NULL,
    "reason" TEXT,
    CONSTRAINT "qc_rule_result_pkey" PRIMARY KEY ("run_id", "rule_id")
);

CREATE TABLE "qc_discrepancy" (
    "study_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "rule_id" TEXT NOT NULL,
    "subject" TEXT,
    "site" TEXT,
    "domain" TEXT,
    "dataset" TEXT,
    "recno" INTEGER,
    "variables" TEXT[],
    "values" TEXT[],
    "message" TEXT NOT NULL,
    "severity" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "first_run_id" UUID NOT NULL,
    "last_run_id" UUID NOT NULL,
    "resolved_run_id" UUID,
    "excluded_reason" TEXT,
    "excluded_by" TEXT,
    "excluded_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "qc_discrepancy_pkey" PRIMARY KEY ("study_id", "key")
);
CREATE INDEX "qc_discrepancy_study_id_rule_id_idx" ON "qc_discrepancy"("study_id", "rule_id");

CREATE TABLE "qc_query" (
    "id" UUID NOT NULL,
    "study_id" UUID NOT NULL,
    "tenant" TEXT NOT NULL,
    "discrepancy_key" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "opened_by" TEXT NOT NULL,
    "opened_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "qc_query_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "qc_query_study_id_status_idx" ON "qc_query"("study_id", "status");
CREATE INDEX "qc_query_study_id_discrepancy_key_idx" ON "qc_query"("study_id", "discrepancy_key");

CREATE TABLE "qc_query_event" (
    "id" UUID NOT NULL,
    "query_id" UUID NOT NULL,
    "action" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "by" TEXT NOT NULL,
    "text" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "qc_query_event_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "qc_query_event_query_id_at_idx" ON "qc_query_event"("query_id", "at");
