// Signing in with the identity provider: outboxd runs the OpenID Connect
// flow (/auth/login, /auth/callback) and keeps the session in an HttpOnly
// cookie the console never sees. The console learns who is signed in, and
// the CSRF token its changes carry, from GET /auth/session.
import { ApiError, csrf } from "./api";

/** SignInConfig says whether outboxd offers signing in with the identity provider. */
export type SignInConfig = { oidc: boolean; login_url?: string };

/** CookieSession is the signed-in person as GET /auth/session says. */
export type CookieSession = { org: string; sub: string; kind: string; role: string; expires_at: string; csrf_token: string };

const accept = { Accept: "application/json" };

export async function signInConfig(): Promise<SignInConfig> {
  try {
    const res = await fetch("/auth/config", { headers: accept, cache: "no-store" });
    return res.ok ? ((await res.json()) as SignInConfig) : { oidc: false };
  } catch {
    return { oidc: false };
  }
}

/**
 * SessionEnded is why there is no session: the code of GET /auth/session's
 * 401 (no_session, session_expired, session_revoked, session_invalid), or
 * "" when outboxd could not be asked.
 */
export type SessionEnded = { ended: string };

/** cookieSession returns the session of the cookie, or why there is none, and keeps its CSRF token for the API calls. */
export async function cookieSession(): Promise<CookieSession | SessionEnded> {
  try {
    const res = await fetch("/auth/session", { headers: accept, cache: "no-store" });
    if (!res.ok) return { ended: (await res.json().catch(() => null))?.error?.code ?? "" };
    const s = (await res.json()) as CookieSession;
    csrf.value = s.csrf_token;
    return s;
  } catch {
    return { ended: "" };
  }
}

/**
 * signOut clears the session cookie and returns the identity provider's
 * end-session URL, if it has one. A refusal of the CSRF token (the browser
 * signed in again since, in another tab: its cookie holds another token)
 * reads the session again and signs that one out; an answer that is not a
 * success is an ApiError, since the session may not be over.
 */
export async function signOut(): Promise<string | null> {
  const logout = () => fetch("/auth/logout", { method: "POST", headers: { ...accept, "X-CSRF-Token": csrf.value } });
  let res = await logout();
  if (res.status === 403 && "csrf_token" in (await cookieSession())) res = await logout();
  csrf.value = "";
  if (!res.ok) {
    const e = (await res.json().catch(() => null))?.error ?? {};
    throw new ApiError(res.status, e.code ?? "http_" + res.status, e.message ?? res.statusText);
  }
  const body = (await res.json()) as { end_session_url?: string };
  return body.end_session_url ?? null;
}
