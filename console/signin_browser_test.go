package console_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/auth/signin/signintest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// logBuffer collects a process's logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// cookies are the browser's cookies for url.
func (tb *tab) cookies(url string) map[string]*network.Cookie {
	tb.br.t.Helper()
	var list []*network.Cookie
	tb.run("cookies", chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		list, err = network.GetCookies().WithURLs([]string{url}).Do(ctx)
		return err
	}))
	out := map[string]*network.Cookie{}
	for _, c := range list {
		out[c.Name] = c
	}
	return out
}

// status fetches path from the console's page with init (a JavaScript
// object) and returns the answer's status.
func (tb *tab) status(what, path, init string) int {
	tb.br.t.Helper()
	var status int
	tb.eval(what, fmt.Sprintf(`fetch(%q, %s).then(r => r.status)`, path, init), &status)
	return status
}

// signInWithProvider signs in on the identity provider's login page.
func (tb *tab) signInWithProvider(provider *signintest.Provider, user string) {
	tb.br.t.Helper()
	tb.run("sign in with the identity provider",
		chromedp.Navigate(tb.br.base+"/console/"),
		chromedp.WaitVisible(`#sso`, chromedp.ByQuery),
		chromedp.Click(`#sso`, chromedp.ByQuery),
		chromedp.WaitVisible(`#username`, chromedp.ByQuery),
		fill(`#username`, provider.Username(user)),
		fill(`#password`, signintest.Password),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#inbox-h`, chromedp.ByQuery),
		chromedp.WaitVisible(`.live.on`, chromedp.ByQuery),
	)
}

// signInAs signs in as user through /auth/login, whatever the tab's cookie.
func (tb *tab) signInAs(provider *signintest.Provider, user string) {
	tb.br.t.Helper()
	tb.run("sign in again", chromedp.Navigate(tb.br.base+"/auth/login"),
		chromedp.WaitVisible(`#username`, chromedp.ByQuery),
		fill(`#username`, provider.Username(user)), fill(`#password`, signintest.Password),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#inbox-h`, chromedp.ByQuery), chromedp.WaitVisible(`.live.on`, chromedp.ByQuery))
}

// TestBrowser_SignInWithIdentityProvider signs in to the console through a
// real OpenID provider's login page in headless Chromium: the mapped
// organization and role, the HttpOnly cookie, a change made with the CSRF
// token and one refused without it, signing out at the provider, and
// forged and expired cookies refused.
func TestBrowser_SignInWithIdentityProvider(t *testing.T) {
	provider := signintest.Start(t, map[string]map[string]any{
		signintest.Admin: {"tenant": apptest.Org, "groups": []string{"staff", "admin"}},
		// Another person, of another organization.
		signintest.Member: {"tenant": "other-org", "groups": []string{"admin"}},
	})
	var skew atomic.Int64
	logs := &logBuffer{}
	b := apptest.Start(t, &apptest.Options{
		Logs: logs,
		Auth: auth.Config{IdP: auth.IdPConfig{
			Issuer: provider.Issuer, Audience: []string{"outboxd"},
			Claims:   auth.ClaimNames{Org: "tenant", Role: "groups"},
			Defaults: auth.ClaimDefaults{Kind: auth.KindUser},
		}},
		Console: signin.Config{
			ClientID: signintest.ClientID, ClientSecret: signintest.ClientSecret,
			Scopes: []string{"openid", "email", signintest.Scope},
			Now:    func() time.Time { return time.Now().Add(time.Duration(skew.Load())) },
		},
	})
	br := newBrowser(t, b)
	// The redirect URL is derived from the browser's requests: the proxy's.
	provider.AllowOrigin(br.base)
	paused := func() bool { return b.Do("GET", "/v1/queues", b.Owner(), nil).Body["paused"] == true }

	user := br.tab()
	user.run("sign-in page", chromedp.Navigate(br.base+"/console/"), chromedp.WaitVisible(`#sso`, chromedp.ByQuery))
	require.Contains(t, user.text(`main`), "Sign in with your identity provider")
	user.shot("sso-01-signin")
	user.signInWithProvider(provider, signintest.Admin)
	user.shot("sso-02-signed-in")

	t.Run("SignedInAsTheMappedUser", func(t *testing.T) {
		require.Equal(t, apptest.Org+" · admin", user.text(`.identity`))
		var href string
		user.eval("address", `location.href`, &href)
		require.Equal(t, br.base+"/console/", href, "no code or state left in the address bar")
		session := user.cookies(br.base)[signin.SessionCookie]
		require.NotNil(t, session)
		require.True(t, session.HTTPOnly)
		require.False(t, session.Secure, "outboxd is reached over http here")
		require.Equal(t, network.CookieSameSiteLax, session.SameSite)
		require.LessOrEqual(t, session.Expires, float64(time.Now().Add(time.Hour+time.Minute).Unix()), "no longer than the ID token")
		var visible string
		user.eval("document.cookie", `document.cookie`, &visible)
		require.NotContains(t, visible, signin.SessionCookie, "the page cannot read the session")
		var stored string
		user.eval("no token stored", `String(sessionStorage.getItem("outboxd.token"))`, &stored)
		require.Equal(t, "null", stored)
	})

	t.Run("ChangeWithCSRFTokenAndRefusedWithout", func(t *testing.T) {
		user.run("pause from the console", chromedp.Navigate(br.base+"/console/#/operations"), chromedp.WaitVisible(`#q-h`, chromedp.ByQuery),
			chromedp.Click(`//button[normalize-space()="Pause this organization"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//button[normalize-space()="Resume this organization"]`, chromedp.BySearch))
		require.True(t, paused())
		require.Equal(t, http.StatusForbidden, user.status("resume without the CSRF token", "/v1/queues/resume", `{method: "POST"}`))
		require.True(t, paused(), "the refused request changed nothing")
		require.Equal(t, http.StatusOK, user.status("a read needs no CSRF token", "/v1/queues", `{}`))
		user.run("resume from the console", chromedp.Click(`//button[normalize-space()="Resume this organization"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//button[normalize-space()="Pause this organization"]`, chromedp.BySearch))
		require.False(t, paused())
	})

	t.Run("SignOut", func(t *testing.T) {
		user.run("sign out", chromedp.Click(`//button[normalize-space()="Sign out"]`, chromedp.BySearch),
			// The provider ends its session and sends the browser back.
			chromedp.WaitVisible(`#sso`, chromedp.ByQuery))
		var href string
		user.eval("address", `location.href`, &href)
		require.Equal(t, br.base+"/console/", href)
		require.NotContains(t, user.cookies(br.base), signin.SessionCookie)
		require.Equal(t, http.StatusUnauthorized, user.status("signed out", "/v1/invocations", `{}`))
		user.shot("sso-03-signed-out")
	})

	t.Run("ForgedCookieRefused", func(t *testing.T) {
		user.run("forge a session cookie", chromedp.ActionFunc(func(ctx context.Context) error {
			return network.SetCookie(signin.SessionCookie, "forged").WithURL(br.base).WithHTTPOnly(true).Do(ctx)
		}), chromedp.Navigate(br.base+"/console/"), chromedp.WaitVisible(`#sso`, chromedp.ByQuery))
		require.Equal(t, http.StatusUnauthorized, user.status("forged", "/v1/invocations", `{}`))
		require.Contains(t, user.text(`main`), "Your session is no longer valid", "the sign-in page says why")
	})

	t.Run("ExpiredSessionBackToSignIn", func(t *testing.T) {
		user.signInWithProvider(provider, signintest.Admin)
		skew.Store(int64(2 * time.Hour))
		defer skew.Store(0)
		user.run("navigate after expiry", chromedp.Navigate(br.base+"/console/#/activity"),
			chromedp.WaitVisible(`#sso`, chromedp.ByQuery))
		require.Contains(t, user.text(`main`), "expired")
		user.shot("sso-04-expired")
	})

	signInAs := func(tb *tab, who string) { tb.signInAs(provider, who) }
	signInAgain := func(tb *tab) { signInAs(tb, signintest.Admin) }

	t.Run("SignOutAfterSigningInAgainInAnotherTab", func(t *testing.T) {
		// Signing in again in another tab replaces the cookie, and with it
		// the CSRF token this tab read: signing out here was refused (403),
		// yet the tab showed sign-in as if it had worked, and a reload was
		// signed in again.
		signInAgain(user)
		other := br.tab()
		defer other.close()
		signInAgain(other)
		user.run("sign out", chromedp.Click(`//button[normalize-space()="Sign out"]`, chromedp.BySearch),
			chromedp.WaitVisible(`#sso`, chromedp.ByQuery))
		require.NotContains(t, user.cookies(br.base), signin.SessionCookie, "the browser's session is over")
		require.Equal(t, http.StatusUnauthorized, user.status("signed out", "/v1/invocations", `{}`))
		user.run("reload", chromedp.Navigate(br.base+"/console/"), chromedp.WaitVisible(`#sso`, chromedp.ByQuery))
	})

	t.Run("SignOutThatFailsSaysSo", func(t *testing.T) {
		signInAgain(user)
		// As outboxd answers when it cannot store the revocation.
		var ok bool
		user.eval("sign-out answers 503", `(() => { const f = window.fetch; window.fetch = (u, i) => u === "/auth/logout"
			? Promise.resolve(new Response(JSON.stringify({error: {code: "sign_out_incomplete", message: "the cookie is cleared, but the server could not revoke the session"}}),
				{status: 503, headers: {"Content-Type": "application/json"}}))
			: f(u, i); return true })()`, &ok)
		user.run("sign out", chromedp.Click(`//button[normalize-space()="Sign out"]`, chromedp.BySearch),
			chromedp.WaitVisible(`#sso`, chromedp.ByQuery))
		notice := user.text(`main`)
		require.Contains(t, notice, "Signing out did not complete")
		require.Contains(t, notice, "could not revoke the session (503 sign_out_incomplete)")
	})

	t.Run("SignedOutInAnotherTabSaysSo", func(t *testing.T) {
		signInAgain(user)
		other := br.tab()
		defer other.close()
		other.run("sign out in another tab", chromedp.Navigate(br.base+"/console/"), chromedp.WaitVisible(`.live.on`, chromedp.ByQuery),
			chromedp.Click(`//button[normalize-space()="Sign out"]`, chromedp.BySearch), chromedp.WaitVisible(`#sso`, chromedp.ByQuery))
		user.run("reload", chromedp.Reload(), chromedp.WaitVisible(`#sso`, chromedp.ByQuery))
		require.Contains(t, user.text(`main`), "You were signed out, in another tab or window")
		user.shot("sso-05-signed-out-elsewhere")
	})

	t.Run("SignedOutTabFollowsASignInElsewhere", func(t *testing.T) {
		// A tab that went back to sign-in when its session ended (its
		// event stream was refused) took the next sign-in in another tab
		// for a change of person, reloading with "This tab was signed in
		// as undefined (undefined, undefined)".
		signInAgain(user)
		other := br.tab()
		defer other.close()
		other.run("sign out in another tab", chromedp.Navigate(br.base+"/console/"), chromedp.WaitVisible(`.live.on`, chromedp.ByQuery),
			chromedp.Click(`//button[normalize-space()="Sign out"]`, chromedp.BySearch), chromedp.WaitVisible(`#sso`, chromedp.ByQuery))
		user.run("the first tab is signed out", chromedp.WaitVisible(`#sso`, chromedp.ByQuery))
		signInAgain(other)
		user.run("the first tab follows", chromedp.WaitVisible(`#inbox-h`, chromedp.ByQuery), chromedp.WaitVisible(`.live.on`, chromedp.ByQuery))
		require.NotContains(t, user.text(`main`), "undefined")
		require.Equal(t, apptest.Org+" · admin", user.text(`.identity`))
	})

	// sessionOf signs user in with an HTTP client of its own (as another
	// tab or window whose console has not loaded yet) and returns the
	// value of its session cookie.
	sessionOf := func(user string) string {
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		resp := provider.LogIn(t, &http.Client{Jar: jar}, br.base+"/auth/login", user)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		u, err := url.Parse(br.base)
		require.NoError(t, err)
		for _, c := range jar.Cookies(u) {
			if c.Name == signin.SessionCookie {
				return c.Value
			}
		}
		t.Fatal("no session cookie")
		return ""
	}
	// plant gives tb's browser the session cookie value, as a sign-in in
	// another tab or window does (whose console may not have loaded).
	plant := func(tb *tab, value string) {
		tb.run("a sign-in elsewhere", chromedp.ActionFunc(func(ctx context.Context) error {
			return network.SetCookie(signin.SessionCookie, value).WithURL(br.base).WithHTTPOnly(true).Do(ctx)
		}))
	}

	t.Run("ApprovalAfterSigningInAgainElsewhere", func(t *testing.T) {
		// The tab's CSRF token is the old session's: the approval is
		// refused, the tab takes the new session's token (the same
		// person), says so and does not approve by itself.
		b.StoreSlackToken("xoxb-console-signin")
		signInAgain(user)
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "ship it"})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		id := r.Body["invocation_id"].(string)
		card := fmt.Sprintf(`[data-invocation=%q]`, id)
		approve := card + ` button[aria-label^="Approve slack"]`
		user.run("pending card", chromedp.WaitVisible(approve, chromedp.ByQuery))
		plant(user, sessionOf(signintest.Admin))
		user.run("approve in the old tab", chromedp.Click(approve, chromedp.ByQuery), chromedp.WaitVisible(card+` .alert-error`, chromedp.ByQuery))
		require.Contains(t, user.text(card+` .alert-error`), "Nothing was done: repeat the action")
		require.Equal(t, "pending", b.Invocation(id)["status"], "the refused approval is not sent again")
		user.shot("sso-06-csrf-renewed")
		user.run("approve again", chromedp.Click(approve, chromedp.ByQuery), chromedp.WaitNotPresent(card, chromedp.ByQuery))
		b.WaitStatus(id, invocation.StatusCompleted, 10*time.Second)
	})

	t.Run("AnotherPersonSignedInElsewhere", func(t *testing.T) {
		pause := `//button[normalize-space()="Pause this organization"]`
		user.run("operations", chromedp.Navigate(br.base+"/console/#/operations"), chromedp.WaitVisible(pause, chromedp.BySearch))
		plant(user, sessionOf(signintest.Member))
		user.run("pause in the old tab", chromedp.Click(pause, chromedp.BySearch), chromedp.WaitVisible(`#notice`, chromedp.ByQuery))
		require.Equal(t, "other-org · admin", user.text(`.identity`), "the tab shows who is signed in now")
		notice := user.text(`#notice`)
		require.Contains(t, notice, "Nothing was done")
		require.Contains(t, notice, "signed in as "+signintest.Member+" (other-org, admin)")
		require.False(t, paused(), "the first person's organization was not paused")
		user.shot("sso-07-another-person")
	})

	t.Run("AnotherPersonSignsInInAnotherTab", func(t *testing.T) {
		// The tab's pages would read with the other person's cookie under
		// the first one's name: it follows at once.
		signInAgain(user)
		other := br.tab()
		defer other.close()
		signInAs(other, signintest.Member)
		user.run("the first tab follows", chromedp.WaitVisible(`#notice`, chromedp.ByQuery))
		require.Equal(t, "other-org · admin", user.text(`.identity`))
		require.Contains(t, user.text(`#notice`), "signed in as "+signintest.Member+" (other-org, admin)")
	})

	t.Run("ReadAfterAnotherPersonSignedInElsewhere", func(t *testing.T) {
		// Another person signed in in a window whose console did not load,
		// so no tab said so: the tab's next read went out with their
		// cookie and showed their organization under the first person's
		// name. outboxd refuses it (the read names the tab's person) and
		// the tab reloads as the person signed in now.
		signInAgain(user)
		plant(user, sessionOf(signintest.Member))
		var ok bool
		user.eval("open Activity", `(() => { location.hash = "#/activity"; return true })()`, &ok)
		user.run("the read is refused", chromedp.WaitVisible(`#notice`, chromedp.ByQuery), chromedp.WaitVisible(`.live.on`, chromedp.ByQuery))
		require.Equal(t, "other-org · admin", user.text(`.identity`), "the tab shows who is signed in now")
		require.Contains(t, user.text(`#notice`), "This tab was signed in as "+signintest.Admin+" ("+apptest.Org+", admin)")
		require.Contains(t, user.text(`#notice`), "signed in as "+signintest.Member+" (other-org, admin)")
	})

	out := logs.String()
	require.NotContains(t, out, signintest.ClientSecret)
	require.NotContains(t, out, "eyJ", "no JWT in the logs")
}

// TestBrowser_ApprovalInAnOlderTabAfterAnotherPersonSignsIn: two admins of
// one organization share a browser. The first one's tab shows a pending
// request; the second signs in in another tab, and the first tab, told
// so, reloads as them. Until that reload has loaded, the first tab still
// shows the first person and its buttons still work: an approval clicked
// then went out with the second person's cookie and CSRF token (which the
// tab had just read) and was done as them, unseen. outboxd refuses it
// (the approval names the tab's person), and nothing is approved.
func TestBrowser_ApprovalInAnOlderTabAfterAnotherPersonSignsIn(t *testing.T) {
	admin := map[string]any{"tenant": apptest.Org, "groups": []string{"admin"}}
	provider := signintest.Start(t, map[string]map[string]any{signintest.Admin: admin, signintest.Member: admin})
	b := apptest.Start(t, &apptest.Options{
		Auth: auth.Config{IdP: auth.IdPConfig{
			Issuer: provider.Issuer, Audience: []string{"outboxd"},
			Claims:   auth.ClaimNames{Org: "tenant", Role: "groups"},
			Defaults: auth.ClaimDefaults{Kind: auth.KindUser},
		}},
		Console: signin.Config{
			ClientID: signintest.ClientID, ClientSecret: signintest.ClientSecret,
			Scopes: []string{"openid", "email", signintest.Scope},
		},
	})
	br := newBrowser(t, b)
	provider.AllowOrigin(br.base)
	b.StoreSlackToken("xoxb-console-older-tab")

	first := br.tab()
	first.signInWithProvider(provider, signintest.Admin)
	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "ship it"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	card := fmt.Sprintf(`[data-invocation=%q]`, id)
	approve := card + ` button[aria-label^="Approve slack"]`
	first.run("pending card", chromedp.WaitVisible(approve, chromedp.ByQuery), previewShown(card))

	// As a person would, the first tab's approval is clicked once its
	// reload has begun (beforeunload) but not loaded: the page is still
	// the first person's, and it still runs. Its page loads are held, so
	// the reload waits; the approval's answer is watched on the network.
	var clickWhenLeaving bool
	first.eval("click approve when the page begins to reload", fmt.Sprintf(`(() => {
		let clicked = false;
		addEventListener("beforeunload", () => {
			if (clicked || document.querySelector(".identity").title !== %q) return;
			clicked = true;
			setTimeout(() => document.querySelector(%q).click(), 0);
		});
		return true;
	})()`, signintest.Admin, approve), &clickWhenLeaving)
	held := make(chan fetch.RequestID, 8)
	approval := make(chan int64, 1)
	chromedp.ListenTarget(first.ctx, func(ev any) {
		switch e := ev.(type) {
		// Never blocking: listeners run on the tab's event loop.
		case *fetch.EventRequestPaused:
			select {
			case held <- e.RequestID:
			default:
			}
		case *network.EventResponseReceived:
			if strings.HasSuffix(e.Response.URL, "/approve") {
				select {
				case approval <- e.Response.Status:
				default:
				}
			}
		}
	})
	first.run("hold page loads", network.Enable(),
		fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*", ResourceType: network.ResourceTypeDocument}}))

	second := br.tab()
	defer second.close()
	second.signInAs(provider, signintest.Member)
	select {
	case status := <-approval:
		require.NotEqual(t, int64(http.StatusOK), status, "the approval went out as the second person")
	case <-time.After(15 * time.Second):
		t.Fatal("the first tab did not reload, or its approval was not sent")
	}
	inv := b.Invocation(id)
	require.Equal(t, "pending", inv["status"], "nothing approved")
	require.Nil(t, inv["approved_by"])

	// Let the reload (or reloads) load: the tab is the second person's.
	first.run("let page loads through", chromedp.ActionFunc(func(ctx context.Context) error {
		var ids []fetch.RequestID
		for len(held) > 0 {
			ids = append(ids, <-held)
		}
		for _, rid := range ids {
			// A reload replaced by the next one is no longer held.
			_ = fetch.ContinueRequest(rid).Do(ctx)
		}
		return fetch.Disable().Do(ctx)
	}), chromedp.WaitVisible(`#notice`, chromedp.ByQuery), chromedp.WaitVisible(`.live.on`, chromedp.ByQuery))
	require.Contains(t, first.text(`#notice`), "since then this browser signed in as "+signintest.Member)
	first.shot("sso-08-older-tab-approval")
}
