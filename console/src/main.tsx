// The console's shell: sign-in, the hash router, the navigation and the
// one live event stream every page listens to.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import {
  api,
  readClaims,
  setCSRFRefusedHandler,
  setSessionChangedHandler,
  setUnauthorizedHandler,
  signedIn,
  streamEvents,
  token,
  type Claims,
} from "./api";
import { adopt, cookieSession, signInConfig, signOut, type CookieSession } from "./signin";
import { Alert, bus, errorText } from "./ui";
import { SignIn } from "./pages/signin";
import { Inbox } from "./pages/inbox";
import { Activity, InvocationPage } from "./pages/activity";
import { EnvelopePage, Envelopes } from "./pages/envelopes";
import { Operations } from "./pages/operations";
import { ConnectorPage, Connectors } from "./pages/connectors";
import { Audit } from "./pages/audit";
import { adminNav, adminPage } from "./pages/admin";
import "./style.css";

/**
 * Session is the signed-in user as the token, or the session cookie
 * signed in with the identity provider (cookie), says; the server decides.
 */
export type Session = { claims: Claims; canDecide: boolean; isOwner: boolean; cookie?: boolean };

function sessionOf(t: string | null): Session | null {
  const claims = t ? readClaims(t) : null;
  if (!claims) return null;
  return { claims, canDecide: claims.role === "admin" || claims.role === "owner", isOwner: claims.role === "owner" };
}

function cookieSessionOf(s: CookieSession): Session {
  const claims: Claims = { org: s.org, sub: s.sub, kind: s.kind, role: s.role, exp: Date.parse(s.expires_at) / 1000 };
  return { claims, canDecide: s.role === "admin" || s.role === "owner", isOwner: s.role === "owner", cookie: true };
}

// signedInByCookie says which notice a refusal gets.
let signedInByCookie = false;

// shown is who the tab shows as signed in.
let shown: Claims | null = null;

// While the tab is signed in by the session cookie, signedInUntil holds the
// session's expiry in the tab's session storage: when the cookie is gone
// at the next load, the sign-in page can say whether the session expired
// or was signed out elsewhere (outboxd sees no cookie either way).
const signedInUntil = "outboxd.session-until";
// carriedNotice holds a notice across a reload.
const carriedNotice = "outboxd.notice";
// signInSignal, in local storage, changes whenever a console reads a cookie
// session: the browser's other tabs read theirs again, since the cookie
// they share may now be another person's.
const signInSignal = "outboxd.signed-in";

/** endedNotice says why the session ended, from GET /auth/session's 401 code; "" when there was none to end. */
function endedNotice(code: string): string {
  const until = sessionStorage.getItem(signedInUntil);
  switch (code) {
    case "session_expired":
      return "Your session expired. Sign in again.";
    case "session_revoked":
      return "Your session was ended: it was signed out, or an owner revoked it. Sign in again.";
    case "session_invalid":
      return "Your session is no longer valid (outboxd's secrets key changed, or its cookie was altered). Sign in again.";
    case "no_session":
      if (!until) return "";
      return Date.now() >= Date.parse(until)
        ? "Your session expired. Sign in again."
        : "You were signed out, in another tab or window (or this browser deleted the session's cookie). Sign in again.";
  }
  return "";
}

/** keepCookieSession makes s, the person the tab shows, the session its API calls are made in. */
function keepCookieSession(s: CookieSession) {
  adopt(s);
  signedInByCookie = true;
  sessionStorage.setItem(signedInUntil, s.expires_at);
}

/** samePerson: the session s is the person c the tab shows, with the same role. */
function samePerson(c: Claims | null, s: CookieSession): boolean {
  return !!c && s.sub === c.sub && s.org === c.org && s.role === c.role;
}

/** reloadAs reloads the tab as the person of s, saying who it showed before. */
function reloadAs(c: Claims | null, s: CookieSession, what: string) {
  sessionStorage.setItem(
    carriedNotice,
    `This tab was signed in as ${c?.sub} (${c?.org}, ${c?.role}); since then this browser signed in as ${s.sub} (${s.org}, ${s.role}) in another tab or window. ${what}This is now ${s.sub}'s console.`,
  );
  location.reload();
}

function useRoute(): string[] {
  const read = () => (location.hash.replace(/^#\/?/, "") || "inbox").split("/").map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

function App() {
  const [session, setSession] = useState<Session | null>(() => sessionOf(token.get()));
  // Without a pasted token, the session cookie may sign the console in.
  const [checking, setChecking] = useState(() => !token.get());
  const [oidc, setOidc] = useState(false);
  const [notice, setNotice] = useState("");
  const [live, setLive] = useState(false);
  const route = useRoute();

  shown = session?.claims ?? null;

  useEffect(() => {
    const signedOut = (notice: string) => {
      token.clear();
      signedIn.csrf = "";
      signedIn.subject = "";
      setSession(null);
      setNotice(notice);
    };
    setUnauthorizedHandler((message) => {
      if (!signedInByCookie) {
        signedOut("Your token was refused (" + message + "): it expired or is not valid. Paste a new one.");
        return;
      }
      // GET /auth/session says why.
      void cookieSession().then((s) => signedOut(("ended" in s && endedNotice(s.ended)) || "You were signed out (" + message + "). Sign in again."));
    });
    setCSRFRefusedHandler(async () => {
      // The cookie holds another session than the one this tab read: the
      // browser signed in again elsewhere. The refused change is not sent
      // again: the person decides again with what the page shows.
      const was = { claims: shown, csrf: signedIn.csrf };
      const s = await cookieSession();
      if ("ended" in s) {
        signedOut(endedNotice(s.ended) || "You were signed out. Sign in again.");
        return "You were signed out: nothing was done.";
      }
      if (samePerson(was.claims, s)) {
        keepCookieSession(s);
        if (s.csrf_token === was.csrf) return null;
        return "You signed in again in another tab or window, which renewed this session's security token. Nothing was done: repeat the action if you still want it.";
      }
      reloadAs(was.claims, s, "Nothing was done. ");
      return "This browser is now signed in as someone else: nothing was done, the page reloads.";
    });
    setSessionChangedHandler(async () => {
      // outboxd refused a request this tab made for the person it shows:
      // the cookie is now someone else's, signed in elsewhere (in a tab or
      // window whose console may not have loaded, so no other tab said
      // so). The request is not sent again.
      const was = shown;
      const s = await cookieSession();
      if ("ended" in s) {
        signedOut(endedNotice(s.ended) || "You were signed out. Sign in again.");
        return "You were signed out: nothing was done.";
      }
      if (samePerson(was, s)) {
        // Signed in again as this person meanwhile.
        keepCookieSession(s);
        return "This browser signed in again in another tab or window. Nothing was done: repeat the action if you still want it.";
      }
      reloadAs(was, s, "Nothing was done. ");
      return "This browser is now signed in as someone else: nothing was done, the page reloads.";
    });
    // Another tab read a cookie session: this one's pages would now read
    // (GET needs no CSRF token) with a cookie that may be another
    // person's, under this one's name.
    const onStorage = (e: StorageEvent) => {
      if (e.key !== signInSignal || !signedInByCookie || token.get()) return;
      const was = shown;
      void cookieSession().then((s) => {
        if ("ended" in s) return; // the next request says so
        // Signed out meanwhile: the sign-in page takes the new session.
        if (!was) location.reload();
        else if (samePerson(was, s)) keepCookieSession(s);
        else reloadAs(was, s, "");
      });
    };
    addEventListener("storage", onStorage);
    void signInConfig().then((c) => setOidc(c.oidc));
    const carried = sessionStorage.getItem(carriedNotice);
    if (carried) {
      sessionStorage.removeItem(carriedNotice);
      setNotice(carried);
    }
    if (token.get()) return;
    void cookieSession()
      .then((s) => {
        if ("ended" in s) {
          setNotice((n) => n || endedNotice(s.ended));
          return;
        }
        keepCookieSession(s);
        localStorage.setItem(signInSignal, String(Date.now()) + Math.random());
        setSession(cookieSessionOf(s));
      })
      .finally(() => setChecking(false));
  }, []);

  useEffect(() => {
    if (!session) return;
    return streamEvents((m) => bus.emit(m), setLive);
  }, [session]);

  // Page headings take the focus on navigation, for screen readers.
  useEffect(() => {
    document.querySelector<HTMLElement>("main h1")?.focus();
  }, [route.join("/")]);

  if (!session && checking) {
    return (
      <main id="main" class="signin">
        <p role="status">Signing in…</p>
      </main>
    );
  }
  if (!session) {
    return (
      <SignIn
        notice={notice}
        oidc={oidc}
        onSignIn={async (t) => {
          const s = sessionOf(t);
          if (!s) throw new Error("This is not a JWT.");
          if (s.claims.kind !== "user") throw new Error(`This is a ${s.claims.kind} token; the console takes a user token (owner, admin or member).`);
          token.set(t);
          signedInByCookie = false;
          sessionStorage.removeItem(signedInUntil);
          try {
            await api.listInvocations({ limit: 1 });
          } catch (e) {
            token.clear();
            throw new Error(errorText(e));
          }
          setNotice("");
          setSession(s);
        }}
      />
    );
  }

  const [page, id] = route;
  const admin = session.canDecide;
  const nav: [string, string, boolean][] = [
    ["inbox", "Inbox", true],
    ["activity", "Activity", true],
    ["envelopes", "Envelopes", true],
    ["operations", "Operations", admin],
    ["connectors", "Connectors", admin],
    ["audit", "Audit", admin],
    ...adminNav(session),
  ];
  const section = page === "invocations" ? "activity" : page;
  let body;
  switch (page) {
    case "activity":
      body = <Activity session={session} />;
      break;
    case "invocations":
      body = <InvocationPage id={id} session={session} />;
      break;
    case "envelopes":
      body = id ? <EnvelopePage id={id} session={session} /> : <Envelopes />;
      break;
    case "operations":
      body = <Operations session={session} />;
      break;
    case "connectors":
      body = id ? <ConnectorPage id={id} /> : <Connectors />;
      break;
    case "audit":
      body = <Audit session={session} />;
      break;
    default:
      body = adminPage(page, id, session) ?? <Inbox session={session} />;
  }
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById("main")?.focus(); }}>
        Skip to content
      </a>
      <header class="top">
        <div class="brand">outboxd</div>
        <nav aria-label="Console">
          <ul>
            {nav.filter(([, , show]) => show).map(([key, label]) => (
              <li key={key}>
                <a href={"#/" + key} aria-current={section === key ? "page" : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span class={"live " + (live ? "on" : "off")} role="status" aria-live="polite">
            {live ? "Live" : "Reconnecting…"}
          </span>
          <span class="identity" title={session.claims.sub}>
            {session.claims.org} · {session.claims.role}
          </span>
          <button
            class="link"
            onClick={async () => {
              if (session.cookie) {
                // The identity provider ends its own session too, then
                // sends the browser back to the console.
                let end: string | null = null;
                sessionStorage.removeItem(signedInUntil);
                try {
                  end = await signOut();
                } catch (e) {
                  // The session may not be over: sign-in says so.
                  setNotice("Signing out did not complete: " + errorText(e));
                }
                signedInByCookie = false;
                if (end) {
                  location.assign(end);
                  return;
                }
              }
              token.clear();
              setSession(null);
              location.hash = "#/inbox";
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {notice ? (
          <Alert kind="info">
            <span id="notice">{notice}</span>{" "}
            <button class="link" onClick={() => setNotice("")}>
              Dismiss
            </button>
          </Alert>
        ) : null}
        {body}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
