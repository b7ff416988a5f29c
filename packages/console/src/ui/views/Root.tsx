import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { ResolvedConsoleConfig } from '../../config.ts';
import { errorFromResponse, NETWORK_MESSAGE } from '../api/errors.ts';
import type { Me } from '../api/types.ts';
import { tokenFromFragment } from '../state/route.ts';
import { readToken, tokenKey, writeToken } from '../state/session.ts';
import { Console } from './Console.tsx';
import { SignIn } from './SignIn.tsx';

type Session =
  | { phase: 'checking'; token: string }
  | { phase: 'signed-out'; message: string | null; busy: boolean; saved?: string }
  | { phase: 'signed-in'; token: string; me: Me };

const INVALID = 'This token is not valid. Check it and try again, or ask for a new one.';
const EXPIRED = 'Your token is no longer valid. Sign in again.';

type Check = { ok: true; me: Me } | { ok: false; message: string; unauthorized: boolean };

async function checkToken(apiBase: string, token: string): Promise<Check> {
  let res: Response;
  try {
    res = await fetch(`${apiBase}/me`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
  } catch {
    return { ok: false, message: NETWORK_MESSAGE, unauthorized: false };
  }
  if (res.status === 401) return { ok: false, message: INVALID, unauthorized: true };
  if (!res.ok) return { ok: false, message: (await errorFromResponse(res)).message, unauthorized: false };
  try {
    return { ok: true, me: (await res.json()) as Me };
  } catch {
    return { ok: false, message: 'The server answered something that is not the console API.', unauthorized: false };
  }
}

/**
 * The page's root: who is signed in. The token comes from a `#token=…` link (taken out of the
 * address bar at once), from localStorage, or from the sign-in screen; other tabs of the origin
 * follow sign-ins and sign-outs through the `storage` event.
 */
export function Root({ config }: { config: ResolvedConsoleConfig }) {
  const [session, setSession] = useState<Session>(() => {
    const fromLink = tokenFromFragment(location.hash);
    if (fromLink) {
      // The token must not stay in the address bar, the history or a bookmark.
      history.replaceState(history.state, '', location.pathname + location.search);
      writeToken(config.apiBase, fromLink);
      return { phase: 'checking', token: fromLink };
    }
    const stored = readToken(config.apiBase);
    return stored ? { phase: 'checking', token: stored } : { phase: 'signed-out', message: null, busy: false };
  });
  const attempt = useRef(0);

  const validate = useCallback(
    async (token: string, fromForm: boolean) => {
      const mine = ++attempt.current;
      const check = await checkToken(config.apiBase, token);
      if (mine !== attempt.current) return; // a newer sign-in or sign-out came first
      if (check.ok) {
        writeToken(config.apiBase, token);
        setSession({ phase: 'signed-in', token, me: check.me });
        return;
      }
      if (check.unauthorized) writeToken(config.apiBase, null);
      const message = check.unauthorized && !fromForm ? EXPIRED : check.message;
      // A server out of reach says nothing about the token: keep it to try again.
      setSession(check.unauthorized ? { phase: 'signed-out', message, busy: false } : { phase: 'signed-out', message, busy: false, saved: token });
    },
    [config.apiBase],
  );

  const signOut = useCallback(
    (message: string | null = null) => {
      attempt.current++;
      writeToken(config.apiBase, null);
      setSession({ phase: 'signed-out', message, busy: false });
    },
    [config.apiBase],
  );

  useEffect(() => {
    if (session.phase === 'checking') void validate(session.token, false);
    // Only the first session is checked here; later ones go through signIn() or the listeners.
  }, []);

  // A `#token=…` link opened in a tab that already shows the console.
  useEffect(() => {
    const onHash = () => {
      const token = tokenFromFragment(location.hash);
      if (!token) return;
      history.replaceState(history.state, '', location.pathname + location.search);
      setSession({ phase: 'checking', token });
      void validate(token, false);
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, [validate]);

  useEffect(() => {
    const onStorage = (e: StorageEvent) => {
      if (e.key !== tokenKey(config.apiBase) && e.key !== null) return;
      const token = readToken(config.apiBase);
      if (!token) {
        attempt.current++;
        setSession({ phase: 'signed-out', message: 'You signed out in another tab.', busy: false });
      } else {
        setSession({ phase: 'checking', token });
        void validate(token, false);
      }
    };
    window.addEventListener('storage', onStorage);
    return () => window.removeEventListener('storage', onStorage);
  }, [config.apiBase, validate]);

  if (session.phase === 'signed-in') {
    return <Console config={config} token={session.token} me={session.me} signOut={signOut} expired={() => signOut(EXPIRED)} />;
  }
  if (session.phase === 'checking') {
    return (
      <main id="main" class="signin">
        <p class="boot" role="status">
          Signing in…
        </p>
      </main>
    );
  }
  return (
    <SignIn
      title={config.title}
      message={session.message}
      busy={session.busy}
      retry={
        session.saved
          ? () => {
              const token = session.saved!;
              setSession({ phase: 'signed-out', message: null, busy: true, saved: token });
              void validate(token, false);
            }
          : null
      }
      signIn={(token) => {
        setSession({ phase: 'signed-out', message: null, busy: true });
        void validate(token, true);
      }}
    />
  );
}
