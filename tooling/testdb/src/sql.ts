import { Client } from 'pg';

/** Names this package builds (databases, templates) must match this. */
export const IDENTIFIER_RE = /^[a-z_][a-z0-9_]*$/;

/** Postgres truncates identifiers longer than 63 bytes (NAMEDATALEN - 1). */
const MAX_IDENTIFIER_LENGTH = 63;

export function assertIdentifier(name: string): string {
  if (!IDENTIFIER_RE.test(name) || name.length > MAX_IDENTIFIER_LENGTH) {
    throw new Error(
      `Invalid identifier ${JSON.stringify(name)}: must match ${IDENTIFIER_RE} and be at most ${MAX_IDENTIFIER_LENGTH} characters`,
    );
  }
  return name;
}

/** Validates `name` against {@link IDENTIFIER_RE} and double-quotes it. */
export function quoteIdent(name: string): string {
  return `"${assertIdentifier(name)}"`;
}

/** Returns `url` with its database (path) replaced by `database`; keeps credentials, host and query. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

/** Runs `fn` with a connected client and always closes it. */
export async function withClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  // A server-side termination of an idle client emits 'error'; without a listener it would crash the process.
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

export function pgErrorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string') {
    return error.code;
  }
  return undefined;
}
