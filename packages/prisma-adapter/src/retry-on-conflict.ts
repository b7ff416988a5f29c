// Postgres answers these when two transactions lock the same rows in different orders, or a
// serialisation check fails; the statement had no effect, so running it again is safe.
const RETRYABLE_CODES = new Set(['40P01', '40001']);

/** PostgreSQL's SQLSTATE of a failed statement, whether it came through Prisma or through `pg`. */
export function sqlStateOf(error: unknown): string | undefined {
  for (let e: any = error, depth = 0; e && depth < 5; e = e.cause, depth++) {
    // Prisma wraps a failed raw query as P2010 and keeps PostgreSQL's SQLSTATE deeper down.
    const candidates = [e.meta?.driverAdapterError?.cause?.originalCode, e.meta?.code, e.originalCode, e.code];
    for (const code of candidates) {
      if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('P')) return code;
    }
    const message: unknown = e.message;
    if (typeof message === 'string') {
      if (message.includes('deadlock detected')) return '40P01';
      if (message.includes('could not serialize access')) return '40001';
    }
    if (e.meta?.driverAdapterError?.cause) e = { cause: e.meta.driverAdapterError.cause };
  }
  return undefined;
}

/** Runs `fn` again (up to 5 attempts, with a short random pause) when it lost a deadlock or a serialisation check. */
export async function retryOnConflict<T>(fn: () => PromiseLike<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      const code = sqlStateOf(error);
      if (attempt >= 5 || !code || !RETRYABLE_CODES.has(code)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 20));
    }
  }
}
