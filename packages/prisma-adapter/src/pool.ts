import type { PgClientLike, PgPoolLike, PrismaQueryable } from './prisma-like.ts';

/** Positional SQL text for a template (`$1`, `$2`, ...), built once per call site. */
const textOf = new WeakMap<TemplateStringsArray, string>();
function sqlText(strings: TemplateStringsArray): string {
  let text = textOf.get(strings);
  if (text === undefined) {
    text = strings.reduce((acc, part, i) => `${acc}$${i}${part}`);
    textOf.set(strings, text);
  }
  return text;
}

/** The store's two ways of sending SQL, over a `pg` pool or one of its clients. */
export function poolQueryable(db: Pick<PgClientLike, 'query'>): PrismaQueryable {
  return {
    $queryRaw: <T>(strings: TemplateStringsArray, ...values: unknown[]) => db.query(sqlText(strings), values).then((r) => r.rows as T),
    $queryRawUnsafe: <T>(text: string, ...values: unknown[]) => db.query(text, values).then((r) => r.rows as T),
  };
}

/**
 * A transaction on one client of the pool, with the bounds of Prisma's interactive transactions:
 * at most `maxWait` ms to get a connection, and a transaction left idle (or a statement running)
 * longer than `timeout` ms is ended by the server, so a stuck caller cannot hold row locks.
 */
export async function poolTransaction<T>(
  pool: PgPoolLike,
  bounds: { maxWait: number; timeout: number },
  fn: (tx: PrismaQueryable) => Promise<T>,
): Promise<T> {
  const client = await connectWithin(pool, bounds.maxWait);
  let broken: unknown;
  // A checked-out client has no listener of the pool's: without this one, a connection lost
  // mid-transaction (server restart, timeout, terminated backend) would be an unhandled 'error'
  // event and take the process down. The failing query rejects as well; the client is dropped.
  const onError = (error: Error) => {
    broken ??= error;
  };
  client.on('error', onError);
  try {
    const timeout = Math.max(1, Math.round(bounds.timeout));
    // One round trip: simple protocol, no parameters (the number is ours).
    await client.query(`BEGIN; SET LOCAL statement_timeout = ${timeout}; SET LOCAL idle_in_transaction_session_timeout = ${timeout}`);
    const result = await fn(poolQueryable(client));
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError; // the connection is unusable: the pool drops it
    }
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken instanceof Error ? broken : undefined);
  }
}

async function connectWithin(pool: PgPoolLike, maxWait: number): Promise<PgClientLike> {
  const connecting = pool.connect();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`no database connection was free within ${maxWait} ms (PrismaFanoutStoreOptions.transaction.maxWait)`);
      error.name = 'TimeoutError'; // transient for the default classifier
      reject(error);
    }, maxWait);
  });
  try {
    return await Promise.race([connecting, timedOut]);
  } catch (error) {
    // A connection that arrives after the deadline goes straight back.
    connecting.then((client) => client.release(), () => {});
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
