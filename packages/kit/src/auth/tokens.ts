import { createHash } from 'node:crypto';
import type { Principal, Role } from '@fanout/http';

/** Tokens by their SHA-256, so the table never holds them and a lookup takes no secret-dependent path. */
export type TokenTable = ReadonlyMap<string, Principal>;

const ROLES: readonly Role[] = ['user', 'operator'];
const digest = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * Parses `token:tenant[:role],…` (role `user` by default, or `operator`). A token shorter than
 * 6 characters, a repeated token, an empty tenant or an unknown role is refused with its entry
 * named by position (never by the token itself, which may end up in a log).
 */
export function parseTokens(spec: string): TokenTable {
  const table = new Map<string, Principal>();
  spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .forEach((entry, index) => {
      const where = `entry ${index + 1}`;
      const [token, tenant, role = 'user', ...rest] = entry.split(':');
      if (!token || tenant === undefined || rest.length > 0) throw new Error(`${where} must be token:tenant or token:tenant:role`);
      if (token.length < 6) throw new Error(`${where}: the token must be at least 6 characters`);
      if (!/^[A-Za-z0-9._-]{1,100}$/.test(tenant)) throw new Error(`${where}: the tenant must be 1-100 letters, digits, '.', '_' or '-'`);
      if (!ROLES.includes(role as Role)) throw new Error(`${where}: the role must be user or operator`);
      const key = digest(token);
      if (table.has(key)) throw new Error(`${where}: the token is listed twice`);
      table.set(key, { tenant, role: role as Role });
    });
  return table;
}

/** An `authenticate` function for `@fanout/http` over a token table. */
export function tokenAuthenticator(table: TokenTable): (token: string) => Principal | null {
  return (token) => table.get(digest(token)) ?? null;
}

/** A token table entry for a token made at run time (the local run's operator token). */
export function withToken(table: TokenTable, token: string, principal: Principal): TokenTable {
  return new Map([...table, [digest(token), principal]]);
}
