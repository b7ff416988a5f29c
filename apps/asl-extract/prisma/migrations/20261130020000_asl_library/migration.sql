-- CreateTable
CREATE TABLE "kb_document" (
    "id" UUID NOT NULL,
    "owner" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "filename" TEXT NOT NULL,
    "storage_key" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "kb_document_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "asl_extraction" (
    "id" UUID NOT NULL,
    "task_id" UUID NOT NULL,
    "item_id" UUID NOT NULL,
    "document_id" UUID NOT NULL,
    "filename" TEXT NOT NULL,
    "fields" JSONB NOT NULL,
    "model" TEXT NOT NULL,
    "prompt_version" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "asl_extraction_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "kb_document_owner_created_at_idx" ON "kb_document"("owner", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "asl_extraction_item_id_key" ON "asl_extraction"("item_id");

-- CreateIndex
CREATE INDEX "asl_extraction_task_id_idx" ON "asl_extraction"("task_id");
