/** Where the database of `url` is, for a message: its user, host, port and name (never a password). */
export function describeDatabase(url: string): string {
  try {
    const u = new URL(url);
    return `${u.username ? `${decodeURIComponent(u.username)}@` : ''}${u.host}${u.pathname}`;
  } catch {
    return 'unparsable URL';
  }
}

// The failures of a first connection that are the operator's DATABASE_URL to fix: the server not
// there or not reachable, its name not found, the credentials or the database refused.
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', '28P01', '28000', '3D000']);

function connectionFailure(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
    if (e instanceof AggregateError && e.errors.some(connectionFailure)) return true;
  }
  return false;
}

/**
 * Runs a process's first use of the database: a connection that fails for the URL's sake (refused,
 * unknown host, wrong password, no such database) is rethrown naming `DATABASE_URL` and the server.
 */
export async function firstConnection<T>(url: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!connectionFailure(error)) throw error;
    throw new Error(`DATABASE_URL (${describeDatabase(url)}): ${(error as Error).message}`, { cause: error });
  }
}
