// The console's shell: sign-in, the hash router, the navigation and the
// one live event stream every page listens to.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, csrf, readClaims, setUnauthorizedHandler, streamEvents, token, type Claims } from "./api";
import { cookieSession, signInConfig, signOut, type CookieSession } from "./signin";
import { bus, errorText } from "./ui";
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

  useEffect(() => {
    setUnauthorizedHandler((message) => {
      token.clear();
      csrf.value = "";
      setSession(null);
      setNotice(
        signedInByCookie
          ? "You were signed out (" + message + "). Sign in again."
          : "Your token was refused (" + message + "): it expired or is not valid. Paste a new one.",
      );
    });
    void signInConfig().then((c) => setOidc(c.oidc));
    if (token.get()) return;
    void cookieSession()
      .then((s) => {
        if (s) {
          signedInByCookie = true;
          setSession(cookieSessionOf(s));
        }
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
        {body}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
