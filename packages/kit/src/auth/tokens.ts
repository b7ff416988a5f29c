import { createHash, timingSafeEqual } from 'node:crypto';
import type { Principal, Role } from '@fanout/http';

/** Tokens by their SHA-256: the table never holds a token itself. */
export type TokenTable = ReadonlyMap<string, Principal>;

const ROLES: readonly string[] = ['user', 'operator'] satisfies Role[];
/** The shortest token accepted: 16 characters (`openssl rand -base64 24` gives 32). */
export const MIN_TOKEN_LENGTH = 16;
const TENANT = /^[A-Za-z0-9._-]{1,100}$/;
const digest = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * Parses `token:tenant[:role],…` (role `user` by default, or `operator`). The tenant and the role
 * are the last fields, so a token may hold colons without shifting the tenant: such a token is
 * written with its role (`to:ken:team-a:user`), and an entry of three fields or more whose last
 * is not a role is refused rather than guessed. Tenants may not be named `user` or `operator`.
 * Refused too, each naming its entry by position (never by the token, which may end up in a
 * log): a token shorter than 16 characters, of one repeated character, or with spaces; a
 * repeated token; a tenant that is not 1-100 letters, digits, '.', '_' or '-'.
 */
export function parseTokens(spec: string): TokenTable {
  const table = new Map<string, Principal>();
  spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .forEach((entry, index) => {
      const where = `entry ${index + 1}`;
      const parts = entry.split(':');
      if (parts.length < 2) throw new Error(`${where} must be token:tenant or token:tenant:role`);
      if (parts.length >= 3 && !ROLES.includes(parts.at(-1)!)) {
        throw new Error(`${where}: the role must be user or operator (a token holding ':' is written token:tenant:role)`);
      }
      const role = (parts.length >= 3 ? parts.pop() : 'user') as Role;
      const tenant = parts.pop()!;
      const token = parts.join(':');
      if (!token) throw new Error(`${where} must be token:tenant or token:tenant:role`);
      if (ROLES.includes(tenant)) throw new Error(`${where}: the tenant must not be named ${tenant} (a role)`);
      if (!TENANT.test(tenant)) throw new Error(`${where}: the tenant must be 1-100 letters, digits, '.', '_' or '-'`);
      if (token.length < MIN_TOKEN_LENGTH) throw new Error(`${where}: the token must be at least ${MIN_TOKEN_LENGTH} characters`);
      if (/\s/.test(token)) throw new Error(`${where}: the token must not contain spaces`);
      if (new Set(token).size === 1) throw new Error(`${where}: the token must not be one character repeated`);
      const key = digest(token);
      if (table.has(key)) throw new Error(`${where}: the token is listed twice`);
      table.set(key, { tenant, role });
    });
  return table;
}

/**
 * An `authenticate` function for `@fanout/http` over a token table. The presented token's digest
 * is compared with every entry's in constant time, so the time taken says nothing of how close a
 * guess came, nor which entry matched.
 */
export function tokenAuthenticator(table: TokenTable): (token: string) => Principal | null {
  const entries = [...table].map(([key, principal]) => ({ key: Buffer.from(key, 'hex'), principal }));
  return (token) => {
    const presented = Buffer.from(digest(token), 'hex');
    let found: Principal | null = null;
    for (const entry of entries) if (timingSafeEqual(presented, entry.key)) found = entry.principal;
    return found;
  };
}

/** A token table entry for a token made at run time (the local run's operator token). */
export function withToken(table: TokenTable, token: string, principal: Principal): TokenTable {
  return new Map([...table, [digest(token), principal]]);
}
