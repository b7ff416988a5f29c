// Where the token is kept: localStorage, shared by the tabs of one origin (a `storage` event
// signs the other tabs in or out). Storage can be refused (private modes); the console then
// works for this tab alone.

export const tokenKey = (apiBase: string): string => `fanout-console:token:${apiBase}`;

export function readToken(apiBase: string): string | null {
  try {
    return localStorage.getItem(tokenKey(apiBase));
  } catch {
    return null;
  }
}

export function writeToken(apiBase: string, token: string | null): void {
  try {
    if (token === null) localStorage.removeItem(tokenKey(apiBase));
    else localStorage.setItem(tokenKey(apiBase), token);
  } catch {
    // Not kept: this tab still holds it in memory.
  }
}
