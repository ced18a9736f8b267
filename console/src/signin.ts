// Signing in with the identity provider: outboxd runs the OpenID Connect
// flow (/auth/login, /auth/callback) and keeps the session in an HttpOnly
// cookie the console never sees. The console learns who is signed in, and
// the CSRF token its changes carry, from GET /auth/session.
import { ApiError, signedIn } from "./api";

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

/**
 * cookieSession returns the session of the cookie, or why there is none.
 * The cookie may be another person's than the one the tab shows: the API
 * calls take its CSRF token and person only once adopted.
 */
export async function cookieSession(): Promise<CookieSession | SessionEnded> {
  try {
    const res = await fetch("/auth/session", { headers: accept, cache: "no-store" });
    if (!res.ok) return { ended: (await res.json().catch(() => null))?.error?.code ?? "" };
    return (await res.json()) as CookieSession;
  } catch {
    return { ended: "" };
  }
}

/** adopt makes s the session the tab's API calls are made in: its CSRF token, and its person named in each. */
export function adopt(s: CookieSession) {
  signedIn.csrf = s.csrf_token;
  signedIn.subject = encodeURIComponent(s.org) + "/" + encodeURIComponent(s.sub);
}

/**
 * signOut clears the session cookie and returns the identity provider's
 * end-session URL, if it has one. A refusal of the CSRF token (the browser
 * signed in again since, in another tab: its cookie holds another token)
 * reads the session again and signs that one out; an answer that is not a
 * success is an ApiError, since the session may not be over.
 */
export async function signOut(): Promise<string | null> {
  const logout = (token: string) => fetch("/auth/logout", { method: "POST", headers: { ...accept, "X-CSRF-Token": token } });
  let res = await logout(signedIn.csrf);
  if (res.status === 403) {
    const s = await cookieSession();
    if ("csrf_token" in s) res = await logout(s.csrf_token);
  }
  signedIn.csrf = "";
  signedIn.subject = "";
  if (!res.ok) {
    const e = (await res.json().catch(() => null))?.error ?? {};
    throw new ApiError(res.status, e.code ?? "http_" + res.status, e.message ?? res.statusText);
  }
  const body = (await res.json()) as { end_session_url?: string };
  return body.end_session_url ?? null;
}
