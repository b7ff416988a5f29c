import { createHash } from 'node:crypto';

/** pg-boss's database as it runs a statement: its default one passes a `{ name, text, values }` on to `pg`. */
export interface BossDb {
  executeSql(text: string, values?: unknown[], options?: unknown): Promise<{ rows: unknown[] }>;
}

export interface RecurringStatementsOptions {
  /** Statements named at most; later ones are sent unnamed. @default 100 */
  maxNamed?: number;
  /** Texts remembered (seen once, not yet named) at most. @default 1000 */
  maxSeen?: number;
}

// The server refuses a prepared statement's plan when a migration changed its result's columns,
// and a prepared statement cannot hold several commands: such a text is sent unnamed from then on.
const REFUSED = [
  { code: '0A000', message: /cached plan must not change result type/ },
  { code: '42601', message: /cannot insert multiple commands into a prepared statement/ },
];

function refusedNamed(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return REFUSED.some((r) => r.code === code && r.message.test(String(message)));
}

/**
 * Sends the statements pg-boss runs again and again (a worker's fetch and completion of its jobs,
 * above all) as named prepared statements: each connection parses one once and plans it once when
 * PostgreSQL finds a generic plan as good, instead of parsing and planning its kilobyte of SQL at
 * every call, as pg-boss's unnamed statements are. A text is named from its second run, by its
 * hash (one name always means one text on a connection); a text with several commands (pg-boss's
 * transactions) is never named, and neither is one the server refused in its named form. Bounded:
 * statements whose text varies (a value written into it) stop being remembered past `maxSeen`
 * texts (each of the two sets), and past `maxNamed` names everything new goes unnamed.
 */
export function nameRecurringStatements(db: BossDb, options: RecurringStatementsOptions = {}): void {
  const maxNamed = options.maxNamed ?? 100;
  const maxSeen = options.maxSeen ?? 1000;
  const unnamed = db.executeSql.bind(db);
  /** A text seen: its name once it recurred, null until then (or when it is never to be named). */
  const names = new Map<string, string | null>();
  const never = new Set<string>();
  let named = 0;
  db.executeSql = async (text, values, runOptions) => {
    if (typeof text !== 'string') return unnamed(text, values, runOptions);
    let name = names.get(text);
    if (name === undefined) {
      if (names.size < maxSeen && !never.has(text)) names.set(text, null);
      return unnamed(text, values, runOptions);
    }
    if (name === null) {
      if (named >= maxNamed) return unnamed(text, values, runOptions);
      if (/;\s*\S/.test(text)) {
        // Several commands: never named (and, while there is room, never looked at again).
        if (never.size < maxSeen) never.add(text);
        names.delete(text);
        return unnamed(text, values, runOptions);
      }
      name = `pgboss_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
      names.set(text, name);
      named++;
    }
    try {
      // pg takes a query config where a text goes (`pool.query(config)`, `client.query(config)`).
      return await unnamed({ name, text, values } as unknown as string, undefined, runOptions);
    } catch (error) {
      if (!refusedNamed(error)) throw error;
      if (never.size < maxSeen) never.add(text);
      names.delete(text);
      return unnamed(text, values, runOptions);
    }
  };
}
