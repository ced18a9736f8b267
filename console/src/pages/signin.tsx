// Sign-in: with the identity provider when outboxd offers it, or by
// pasting a user token, kept in session storage only.
import { useState } from "preact/hooks";
import { Alert, ErrorAlert, errorText } from "../ui";

export function SignIn({ notice, oidc, onSignIn }: { notice: string; oidc: boolean; onSignIn: (token: string) => Promise<void> }) {
  const [value, setValue] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  return (
    <main id="main" class="signin">
      <form
        class="card"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError("");
          try {
            await onSignIn(value.trim());
          } catch (err) {
            setError(errorText(err));
          } finally {
            setBusy(false);
          }
        }}
      >
        <h1 tabIndex={-1}>Sign in to outboxd</h1>
        {notice ? <Alert kind="info">{notice}</Alert> : null}
        {oidc ? (
          <>
            <button type="button" id="sso" class="primary" onClick={() => location.assign("/auth/login")}>
              Sign in with your identity provider
            </button>
            <p>Or, with a token:</p>
          </>
        ) : null}
        <p>
          Paste a user token (owner, admin or member). It stays in this tab's session storage and is sent only in the
          Authorization header; <code>outboxd token --kind user --role owner --org ORG</code> prints one.
        </p>
        <label for="token">User token</label>
        <textarea id="token" name="token" rows={5} required autoComplete="off" spellcheck={false} value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        <ErrorAlert error={error} />
        <button type="submit" class="primary" disabled={busy || !value.trim()}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
