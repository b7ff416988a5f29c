/**
 * Every Fanout migration, in the order it must run, with how to tell it has run: a query for the
 * last object it creates. The probes read the catalog, not a ledger, so they hold whichever tool
 * applied the SQL (`fanout migrate`, `prisma migrate deploy`, psql). A new migration adds its
 * folder under `prisma/migrations/` and its line here (a test holds the two together).
 */
export interface FanoutMigration {
  /** The folder under `prisma/migrations/` (`<timestamp>_<name>`, Prisma's layout). */
  name: string;
  /** A constant SQL expression that is true once the migration has been applied. */
  probe: string;
}

export const FANOUT_MIGRATIONS: readonly FanoutMigration[] = [
  {
    name: '20261130000000_fanout_init',
    probe: `to_regclass('fanout_slot') IS NOT NULL AND to_regprocedure('fanout_next_status(text,text,boolean,integer,integer)') IS NOT NULL`,
  },
  { name: '20261130010000_fanout_events', probe: `to_regclass('fanout_event_payload') IS NOT NULL` },
  {
    name: '20261130030000_fanout_failure_limit',
    probe: `to_regprocedure('fanout_next_status(text,text,boolean,integer,integer,boolean)') IS NOT NULL`,
  },
  { name: '20261201000000_fanout_console', probe: `to_regclass('fanout_metric') IS NOT NULL` },
  { name: '20261201200000_fanout_promises', probe: `to_regclass('fanout_task_unannounced_idx') IS NOT NULL` },
  // (Its index of pending items is dropped by the next migration: the probe reads another of its objects.)
  { name: '20261202000000_fanout_scheduling', probe: `to_regclass('fanout_task_running_idx') IS NOT NULL` },
  { name: '20261203000000_fanout_claims', probe: `to_regclass('fanout_claim_kind_tenant_idx') IS NOT NULL` },
  { name: '20261204000000_fanout_retention', probe: `to_regclass('fanout_task_fanin_due_idx') IS NOT NULL` },
  { name: '20261204010000_fanout_retention_by_kind', probe: `to_regclass('fanout_task_retention_kind_idx') IS NOT NULL` },
  {
    name: '20261205000000_fanout_purge_hook',
    probe: `EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('fanout_task') AND attname = 'purge_lease_until' AND NOT attisdropped)`,
  },
  {
    name: '20261206000000_fanout_ready_statistics',
    // The setting itself (any value: a DBA's own is kept), not just any option of the column.
    probe: `EXISTS (SELECT 1 FROM pg_attribute a, unnest(a.attoptions) o WHERE a.attrelid = to_regclass('fanout_ready') AND a.attname = 'task_id' AND o LIKE 'n_distinct=%')`,
  },
];

/** One query answering every probe at once: a boolean column `m<i>` per migration. */
export const PROBE_SQL = `SELECT ${FANOUT_MIGRATIONS.map((m, i) => `(${m.probe}) AS m${i}`).join(', ')}`;

/** The names of the migrations a probe row says are missing, in order. */
export function missingFrom(row: Record<string, unknown> | undefined): string[] {
  return FANOUT_MIGRATIONS.filter((_, i) => row?.[`m${i}`] !== true).map((m) => m.name);
}
