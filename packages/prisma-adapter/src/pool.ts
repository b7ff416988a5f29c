import { createHash } from 'node:crypto';
import type { PgClientLike, PgPoolLike, PrismaQueryable } from './prisma-like.ts';

/** A call site's statement: its positional SQL text (`$1`, `$2`, ...) and its prepared statement's name. */
interface Statement {
  name: string;
  text: string;
  /** False once the server refused its prepared form (see `isStalePlan`): sent unnamed from then on. */
  prepared: boolean;
}
/**
 * Named by its text's hash: a connection's name always means one text, even when two copies of
 * this package share a pool (`pg` refuses a name reused for another text).
 */
function newStatement(text: string): Statement {
  return { name: `fanout_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`, text, prepared: true };
}
const statementOf = new WeakMap<TemplateStringsArray, Statement>();
/** The statement of a template, built once per call site. */
function statement(strings: TemplateStringsArray): Statement {
  let found = statementOf.get(strings);
  if (found === undefined) {
    found = newStatement(strings.reduce((acc, part, i) => `${acc}$${i}${part}`));
    statementOf.set(strings, found);
  }
  return found;
}

/** Statements by text, for texts that recur but are not the store's templates (pg-boss's). */
const statementByText = new Map<string, Statement>();
/** Beyond this many texts, the others go unnamed: a text made per call must not fill every connection. */
const MAX_TEXT_STATEMENTS = 200;
function textStatement(text: string): Statement | null {
  let found = statementByText.get(text);
  if (found === undefined) {
    if (statementByText.size >= MAX_TEXT_STATEMENTS) return null;
    found = newStatement(text);
    statementByText.set(text, found);
  }
  return found;
}

/**
 * A prepared statement whose result columns changed under it (a migration altered a table its
 * `RETURNING *` reads): PostgreSQL refuses to run it again on that connection.
 */
function isStalePlan(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '0A000' && /cached plan must not change result type/.test(String((error as Error).message));
}

/**
 * The store's two ways of sending SQL, over a `pg` pool or one of its clients. With `prepared`,
 * each call site's statement is a named prepared statement, parsed once per connection (and
 * planned once, when PostgreSQL finds a generic plan as good): the claim and settle statements
 * are long, and parsing and planning them at every call cost the server as much as running them.
 * A statement the server refuses in its prepared form after a migration is sent unnamed from then
 * on (outside a transaction at once; inside one, `poolTransaction` runs the transaction again).
 *
 * PostgreSQL keeps a statement's generic plan only when it costs no more than the custom plans it
 * made for the first five runs. A custom plan sees an array parameter's length, and for an array
 * of a few elements (the tasks a batch just ended) its plan is cheaper than the generic one, which
 * counts ten: such a statement was planned again at every run, and planning it cost more than
 * running it (0.15-0.3 ms). Its arrays are written as scalar subqueries, `(SELECT $1::uuid[])`,
 * whose length no plan sees, so the generic plan is kept from the sixth run on.
 */
export function poolQueryable(db: Pick<PgClientLike, 'query'>, options: { prepared?: boolean; inTransaction?: boolean } = {}): PrismaQueryable {
  const prepared = options.prepared ?? true;
  const unnamed = <T>(text: string, values: unknown[]) => db.query(text, values).then((r) => r.rows as T);
  const run = <T>(s: Statement | null, text: string, values: unknown[]): Promise<T> => {
    if (!prepared || !s?.prepared) return unnamed<T>(text, values);
    return db.query({ name: s.name, text, values }).then(
      (r) => r.rows as T,
      (error: unknown) => {
        if (!isStalePlan(error)) throw error;
        s.prepared = false;
        if (options.inTransaction) throw error;
        return unnamed<T>(text, values);
      },
    );
  };
  return {
    $queryRaw: <T>(strings: TemplateStringsArray, ...values: unknown[]) => {
      const s = statement(strings);
      return run<T>(s, s.text, values);
    },
    $queryRawUnsafe: <T>(text: string, ...values: unknown[]) => unnamed<T>(text, values),
    $queryRawPrepared: <T>(text: string, ...values: unknown[]) => run<T>(textStatement(text), text, values),
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
  options: { prepared?: boolean } = {},
): Promise<T> {
  try {
    return await transactionOnce(pool, bounds, fn, options);
  } catch (error) {
    // A statement refused in its prepared form failed the transaction; it is sent unnamed now.
    if (!isStalePlan(error)) throw error;
    return transactionOnce(pool, bounds, fn, options);
  }
}

async function transactionOnce<T>(
  pool: PgPoolLike,
  bounds: { maxWait: number; timeout: number },
  fn: (tx: PrismaQueryable) => Promise<T>,
  options: { prepared?: boolean },
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
    const result = await fn(poolQueryable(client, { ...options, inTransaction: true }));
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
