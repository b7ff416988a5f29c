import type pg from 'pg';

/**
 * The database's clock now, in ms since the epoch. Fanout's 10,000-item run and the well-run
 * baseline are timed on it, from their start to the completion the database stored last.
 */
export async function databaseMs(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ t: string }>('SELECT extract(epoch FROM clock_timestamp()) * 1000 AS t');
  return Number(rows[0]!.t);
}
