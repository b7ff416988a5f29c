-- The data-cleaning ETL's own tables. Staging tables (one per load) live in the etl_stage
-- schema and published tables in etl_pub; both are created by the app, named from uuids.
CREATE SCHEMA IF NOT EXISTS etl_stage;
CREATE SCHEMA IF NOT EXISTS etl_pub;

-- A file received by POST /uploads or POST /loads, kept in file storage.
CREATE TABLE etl_upload (
  id          uuid PRIMARY KEY,
  tenant      text NOT NULL,
  filename    text NOT NULL,
  storage_key text NOT NULL,
  bytes       bigint NOT NULL,
  sha256      text NOT NULL,
  created_at  timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX etl_upload_tenant ON etl_upload (tenant, created_at);

-- A mapping spec as the user wrote it, with its parsed form.
CREATE TABLE etl_spec (
  id         uuid PRIMARY KEY,
  tenant     text NOT NULL,
  text       text NOT NULL,
  spec       jsonb NOT NULL,
  sha256     text NOT NULL,
  version    text NOT NULL,
  target     text NOT NULL,
  created_at timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX etl_spec_tenant ON etl_spec (tenant, created_at);

-- One load: one fan-out task (same id), one file through one spec.
CREATE TABLE etl_load (
  id            uuid PRIMARY KEY,
  tenant        text NOT NULL,
  upload_id     uuid NOT NULL REFERENCES etl_upload (id),
  spec_id       uuid NOT NULL REFERENCES etl_spec (id),
  -- loading, ready (checked, waiting to be published), published, failed, discarded
  status        text NOT NULL,
  error         text,
  source        jsonb,
  stage_table   text,
  source_key    text,
  line_field    boolean NOT NULL DEFAULT false,
  chunk_records integer NOT NULL,
  chunks        integer,
  manifest      jsonb,
  created_at    timestamptz(3) NOT NULL DEFAULT now(),
  checked_at    timestamptz(3),
  published_at  timestamptz(3),
  discarded_at  timestamptz(3)
);
CREATE INDEX etl_load_tenant ON etl_load (tenant, created_at);

-- A chunk: a byte range of the source that starts and ends at record boundaries.
CREATE TABLE etl_chunk (
  load_id    uuid NOT NULL REFERENCES etl_load (id) ON DELETE CASCADE,
  chunk_no   integer NOT NULL,
  start_byte bigint NOT NULL,
  end_byte   bigint NOT NULL,
  first_line integer NOT NULL,
  records    integer NOT NULL,
  rows_in    integer,
  clean      integer,
  rejected   integer,
  blank      integer,
  -- indices of the source columns with at least one value in this chunk
  filled     integer[],
  runs       integer NOT NULL DEFAULT 0,
  loaded_at  timestamptz(3),
  PRIMARY KEY (load_id, chunk_no)
);

-- A problem with a rejected row, one per problem, with the row's source text (as pgloader keeps them).
CREATE TABLE etl_reject (
  load_id  uuid NOT NULL,
  chunk_no integer NOT NULL,
  line     integer NOT NULL,
  column_name text,
  reason   text NOT NULL,
  message  text NOT NULL,
  raw      text NOT NULL
);
CREATE INDEX etl_reject_load ON etl_reject (load_id, chunk_no);

-- A group of rows sharing a dedupe key: the one kept and the ones dropped.
CREATE TABLE etl_duplicate (
  load_id       uuid NOT NULL REFERENCES etl_load (id) ON DELETE CASCADE,
  group_no      integer NOT NULL,
  key           jsonb NOT NULL,
  kept_line     integer NOT NULL,
  dropped_lines integer[] NOT NULL,
  PRIMARY KEY (load_id, group_no)
);

-- A column's profile in a load's clean, deduplicated rows.
CREATE TABLE etl_profile (
  load_id        uuid NOT NULL REFERENCES etl_load (id) ON DELETE CASCADE,
  position       integer NOT NULL,
  column_name    text NOT NULL,
  type           text NOT NULL,
  rows           bigint NOT NULL,
  nulls          bigint NOT NULL,
  distinct_count bigint NOT NULL,
  min            text,
  max            text,
  top            jsonb NOT NULL,
  PRIMARY KEY (load_id, position)
);

-- A tenant's published table: its physical name and columns, and the load that last published to it.
CREATE TABLE etl_target (
  tenant       text NOT NULL,
  name         text NOT NULL,
  table_name   text NOT NULL UNIQUE,
  columns      jsonb NOT NULL,
  load_id      uuid,
  published_at timestamptz(3),
  PRIMARY KEY (tenant, name)
);
