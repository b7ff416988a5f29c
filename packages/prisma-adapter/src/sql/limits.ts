// Limits: strict concurrency and rate limits shared by every process on the database. A limit of
// `n` is `n` slot rows, and a slot is taken with one conditional UPDATE of a free row: a global
// slot is held until released or its hold lapses (a crashed holder frees it), a rate slot is
// free again one interval after its last take.
//
// `available_at` keeps milliseconds and rounds to the nearest one: a released slot is marked free
// a millisecond back (rounding up could hide it from a take in the same millisecond), and a rate
// slot's next use is rounded up (rounding down could let two takes fall within one interval).
import type { PrismaQueryable } from '../prisma-like.ts';

/** Makes sure slots `0 .. limit-1` of `name` exist (free); existing ones are left as they are. */
export async function createSlots(db: PrismaQueryable, name: string, limit: number): Promise<void> {
  await db.$queryRaw`
    INSERT INTO fanout_slot (name, slot, available_at)
    SELECT ${name}::text, s, clock_timestamp() - interval '1 second' FROM generate_series(0, ${limit}::int - 1) AS s
    ON CONFLICT (name, slot) DO NOTHING`;
}

/** Takes a free slot of `name` for `holder` until `holdMs` from now; false when none is free. */
export async function acquireSlot(db: PrismaQueryable, name: string, limit: number, holder: string, holdMs: number): Promise<boolean> {
  // SKIP LOCKED lets racing takers pass each other; the row lock plus the re-checked
  // `available_at` condition means one slot row never has two holders.
  const rows = await db.$queryRaw<{ slot: number }[]>`
    UPDATE fanout_slot s SET holder = ${holder}::uuid, available_at = clock_timestamp() + ${holdMs}::int * interval '1 millisecond'
    FROM (
      SELECT name, slot FROM fanout_slot
      WHERE name = ${name}::text AND slot < ${limit}::int AND available_at <= clock_timestamp()
      ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED
    ) free
    WHERE s.name = free.name AND s.slot = free.slot
    RETURNING s.slot`;
  return rows.length > 0;
}

/** Extends `holder`'s slot; false when the holder no longer has it. */
export async function renewSlot(db: PrismaQueryable, name: string, holder: string, holdMs: number): Promise<boolean> {
  const rows = await db.$queryRaw<{ slot: number }[]>`
    UPDATE fanout_slot SET available_at = clock_timestamp() + ${holdMs}::int * interval '1 millisecond'
    WHERE name = ${name}::text AND holder = ${holder}::uuid
    RETURNING slot`;
  return rows.length > 0;
}

export async function releaseSlot(db: PrismaQueryable, name: string, holder: string): Promise<void> {
  await db.$queryRaw`
    UPDATE fanout_slot SET holder = NULL, available_at = clock_timestamp() - interval '1 millisecond'
    WHERE name = ${name}::text AND holder = ${holder}::uuid`;
}

/** Takes a rate slot of `name` now, or says how long until the next one is free. */
export async function takeRateSlot(db: PrismaQueryable, name: string, limit: number, intervalMs: number): Promise<{ takenAt: Date } | { waitMs: number }> {
  // A slot is free again exactly `intervalMs` after its last take, so any window of that length
  // holds at most `limit` takes.
  const [row] = await db.$queryRaw<{ taken_at: Date | null; wait_ms: number }[]>`
    WITH taken AS (
      UPDATE fanout_slot s SET holder = NULL,
        available_at = date_trunc('milliseconds', clock_timestamp() + ${intervalMs}::int * interval '1 millisecond') + interval '1 millisecond'
      FROM (
        SELECT name, slot FROM fanout_slot
        WHERE name = ${name}::text AND slot < ${limit}::int AND available_at <= clock_timestamp()
        ORDER BY available_at LIMIT 1 FOR UPDATE SKIP LOCKED
      ) free
      WHERE s.name = free.name AND s.slot = free.slot
      RETURNING s.available_at - ${intervalMs}::int * interval '1 millisecond' AS taken_at
    )
    SELECT (SELECT taken_at FROM taken) AS taken_at,
           GREATEST(1, ceil(EXTRACT(EPOCH FROM (
             (SELECT min(available_at) FROM fanout_slot WHERE name = ${name}::text AND slot < ${limit}::int) - clock_timestamp())) * 1000))::int AS wait_ms`;
  return row!.taken_at ? { takenAt: row!.taken_at } : { waitMs: row!.wait_ms };
}

/** How many slots of `name` are held right now. */
export async function slotHolders(db: PrismaQueryable, name: string): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM fanout_slot WHERE name = ${name}::text AND holder IS NOT NULL AND available_at > clock_timestamp()`;
  return row?.n ?? 0;
}
