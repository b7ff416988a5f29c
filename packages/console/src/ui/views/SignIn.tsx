import { useEffect, useRef, useState } from 'preact/hooks';

export interface SignInProps {
  title: string;
  /** Why the user is here: a refused token, a lost server, a sign-out. */
  message: string | null;
  busy: boolean;
  /** Tries the saved token again (after the server could not be reached). */
  retry: (() => void) | null;
  signIn(token: string): void;
}

/** The sign-in screen: one token field, validated against `GET /me`. */
export function SignIn({ title, message, busy, retry, signIn }: SignInProps) {
  const [token, setToken] = useState('');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  return (
    <main id="main" class="signin">
      <form
        class="signin-card"
        aria-labelledby="signin-title"
        onSubmit={(e) => {
          e.preventDefault();
          if (token.trim() && !busy) signIn(token.trim());
        }}
      >
        <h1 id="signin-title">{title}</h1>
        <p class="muted">Sign in with the access token you were given. It stays in this browser until you sign out.</p>
        <label for="signin-token">Access token</label>
        <input
          ref={input}
          id="signin-token"
          name="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={token}
          aria-invalid={message ? true : undefined}
          aria-describedby={message ? 'signin-message' : undefined}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <p id="signin-message" class={message ? 'form-error' : 'form-error empty'} role="alert">
          {message ?? ''}
        </p>
        <button type="submit" class="primary" disabled={busy || !token.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        {retry ? (
          <button type="button" class="link-button" disabled={busy} onClick={retry}>
            Try the saved token again
          </button>
        ) : null}
      </form>
    </main>
  );
}
