package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/console"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// chromium finds a Chromium: OUTBOXD_CHROMIUM, else the usual names in PATH.
func chromium() string {
	if p := os.Getenv("OUTBOXD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser drives one headless Chromium for the whole suite; each user gets
// a tab of their own (session storage is per tab).
type browser struct {
	t     *testing.T
	b     *apptest.Bundle
	ctx   context.Context
	shots string
	// base is where the browser reaches outboxd: a proxy that checks every
	// API exchange of the console against the OpenAPI document.
	base string
}

func newBrowser(t *testing.T, b *apptest.Bundle) *browser {
	path := chromium()
	if path == "" {
		t.Skip("BROWSER TESTS SKIPPED: no Chromium found (install Debian's chromium package, or set OUTBOXD_CHROMIUM)")
	}
	// Chromium's helper processes may still write to the profile for a
	// moment after the browser is gone, which t.TempDir's cleanup would
	// report as a failure: the profile (which also holds Chromium's
	// temporary files) is removed here, patiently.
	profile, err := os.MkdirTemp("", "outboxd-chromium-")
	require.NoError(t, err)
	t.Cleanup(func() {
		for deadline := time.Now().Add(5 * time.Second); os.RemoveAll(profile) != nil && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
	})
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		// Its own temporary files too, which it would otherwise leave in /tmp.
		chromedp.Env("TMPDIR=" + profile),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Run(bctx), "starting %s", path)
	shots := os.Getenv("OUTBOXD_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))
	return &browser{t: t, b: b, ctx: bctx, shots: shots, base: contractProxy(t, b)}
}

// contractProxy stands between the browser and outboxd and checks each API
// exchange the console makes against the OpenAPI document, as the Bundle's
// own requests are checked; event streams are passed through as they come.
func contractProxy(t *testing.T, b *apptest.Bundle) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqBody, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, err := http.NewRequestWithContext(r.Context(), r.Method, b.URL+r.URL.RequestURI(), bytes.NewReader(reqBody))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		// outboxd sees the browser's Host, as behind a reverse proxy, so
		// that what it derives from the request (the sign-in's redirect
		// URL) is the proxy's.
		out.Host = r.Host
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			w.WriteHeader(resp.StatusCode)
			rc := http.NewResponseController(w)
			buf := make([]byte, 4096)
			for {
				n, err := resp.Body.Read(buf)
				if n > 0 {
					if _, werr := w.Write(buf[:n]); werr != nil || rc.Flush() != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}
		respBody, err := io.ReadAll(resp.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/v1/") && b.Contract != nil {
			if err := b.Contract.Check(out, reqBody, resp, respBody); err != nil {
				t.Errorf("the console's %s %s does not match the OpenAPI document: %v", r.Method, r.URL.RequestURI(), err)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(respBody)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// tab is one signed-in (or not yet) console.
type tab struct {
	br    *browser
	ctx   context.Context
	phone bool
	// close closes the tab, and with it its event stream: Chromium holds
	// at most six connections to a host, and each signed-in tab's stream
	// keeps one, so a subtest closes the tabs it opened.
	close context.CancelFunc
}

func (br *browser) tab() *tab {
	ctx, cancel := chromedp.NewContext(br.ctx)
	br.t.Cleanup(cancel)
	// The first Run opens the tab, which then lives as long as the context
	// of that Run: so not one with a deadline.
	require.NoError(br.t, chromedp.Run(ctx))
	return &tab{br: br, ctx: ctx, close: cancel}
}

// run runs actions with a deadline, failing the test with what the page
// showed when one does not finish.
func (tb *tab) run(what string, actions ...chromedp.Action) {
	tb.br.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var text string
		short, cancel := context.WithTimeout(tb.ctx, 3*time.Second)
		defer cancel()
		_ = chromedp.Run(short, chromedp.Text("body", &text, chromedp.ByQuery))
		tb.br.t.Fatalf("%s: %v\npage text:\n%s", what, err, text)
	}
}

// fill sets a field's value the way typing does (an input event), which
// is what the console's components listen to.
// previewShown waits until card's Slack message preview has replaced its
// placeholder: the decision buttons below move down when it does, so a
// click is aimed only after that.
func previewShown(card string) chromedp.Action {
	return chromedp.WaitVisible(card+` .preview-message`, chromedp.ByQuery)
}

func fill(sel, value string) chromedp.Action {
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); el.value = %q; el.dispatchEvent(new Event("input", {bubbles: true})); el.dispatchEvent(new Event("change", {bubbles: true})); return true })()`, sel, value)
	var ok bool
	return chromedp.Evaluate(js, &ok)
}

// shot saves a full-page screenshot as name.png (quality 100 is PNG).
func (tb *tab) shot(name string) {
	tb.br.t.Helper()
	var png []byte
	// A tab in the background renders no frames, so it comes to the front
	// first.
	tb.run("screenshot "+name, page.BringToFront(), chromedp.Sleep(150*time.Millisecond), chromedp.FullScreenshot(&png, 100))
	require.NoError(tb.br.t, os.WriteFile(filepath.Join(tb.br.shots, name+".png"), png, 0o644))
}

// signIn opens the console and signs in with token.
func (tb *tab) signIn(token string) {
	tb.run("sign in",
		chromedp.Navigate(tb.br.base+"/console/"),
		chromedp.WaitVisible(`#token`, chromedp.ByQuery),
		fill(`#token`, token),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#inbox-h`, chromedp.ByQuery),
		chromedp.WaitVisible(`.live.on`, chromedp.ByQuery),
	)
}

func (tb *tab) eval(what, js string, out any) {
	tb.br.t.Helper()
	tb.run(what, chromedp.Evaluate(js, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
}

func (tb *tab) text(sel string) string {
	var s string
	tb.run("text of "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

func (tb *tab) count(sel string) int {
	var n int
	tb.eval("count "+sel, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel), &n)
	return n
}

// TestBrowser drives the console in headless Chromium against a real
// outboxd on a real Postgres with a loopback Slack and MCP server.
func TestBrowser(t *testing.T) {
	mcp := newToolServer(t)
	b := apptest.Start(t, &apptest.Options{ConnectorCacheTTL: time.Millisecond})
	br := newBrowser(t, b)
	b.StoreSlackToken("xoxb-console")
	// The text carries a Slack token: it is stored and shown redacted.
	message := map[string]any{"channel": "C0123456789", "text": "deploy finished with xoxb-1234567890-s3cr3tvalue"}

	owner := br.tab()
	owner.run("open", chromedp.Navigate(br.base+"/console/"), chromedp.WaitVisible(`#token`, chromedp.ByQuery))
	owner.shot("01-signin")
	owner.signIn(b.Owner())
	owner.shot("02-inbox-empty")

	var pendingID string
	t.Run("PendingAppearsLive", func(t *testing.T) {
		r := b.Invoke("send_message", message)
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		pendingID = r.Body["invocation_id"].(string)
		card := fmt.Sprintf(`[data-invocation=%q]`, pendingID)
		owner.run("the pending invocation appears without a reload", chromedp.WaitVisible(card, chromedp.ByQuery))
		text := owner.text(card)
		require.Contains(t, text, "slack.send_message")
		require.Contains(t, text, "session session-1")
		require.NotContains(t, text, "s3cr3tvalue", "redacted params stay redacted")
		require.Equal(t, 1, owner.count(card+" .field.redacted"), "the redacted field is shown as redacted")
		require.Equal(t, 1, owner.count(card+` button[aria-label^="Approve slack"]`))
		owner.shot("03-inbox-pending")
	})

	member := br.tab()
	t.Run("MemberSeesNoButtonsAndIsRefused", func(t *testing.T) {
		member.signIn(b.Member())
		card := fmt.Sprintf(`[data-invocation=%q]`, pendingID)
		member.run("member inbox", chromedp.WaitVisible(card, chromedp.ByQuery))
		require.Zero(t, member.count(card+" button"), "a member sees no decision buttons")
		member.shot("04-inbox-member")
		// Forcing the request from the member's console is refused.
		var status int
		member.eval("forced approve", fmt.Sprintf(`fetch("/v1/invocations/%s/approve", {method: "POST",
			headers: {"Authorization": "Bearer " + sessionStorage.getItem("outboxd.token"), "Content-Type": "application/json"},
			body: JSON.stringify({mode: "once"})}).then(r => r.status)`, pendingID), &status)
		require.Equal(t, http.StatusForbidden, status)
		require.Equal(t, "pending", b.Invocation(pendingID)["status"])
	})

	t.Run("ApproveCompletesWithTimeline", func(t *testing.T) {
		card := fmt.Sprintf(`[data-invocation=%q]`, pendingID)
		owner.run("approve", previewShown(card),
			chromedp.Click(card+` button[aria-label^="Approve slack"]`, chromedp.ByQuery),
			chromedp.WaitNotPresent(card, chromedp.ByQuery))
		// Every open console drops it at once: the member's too.
		member.run("member's inbox follows", chromedp.WaitNotPresent(card, chromedp.ByQuery))
		b.WaitStatus(pendingID, invocation.StatusCompleted, 10*time.Second)
		// Where an MCP call that waits for a human sends them.
		owner.run("invocation page",
			chromedp.Navigate(console.InvocationURL(br.base, pendingID)),
			chromedp.WaitVisible(`.timeline .ev-completed`, chromedp.ByQuery))
		steps := owner.text(`.timeline`)
		for _, step := range []string{"created", "approved", "started", "completed"} {
			require.Contains(t, steps, step)
		}
		require.Contains(t, owner.text(`.badge.status-completed`), "completed")
		owner.shot("05-invocation-timeline")
	})

	t.Run("DenyWithReason", func(t *testing.T) {
		owner.run("inbox", chromedp.Navigate(br.base+"/console/#/inbox"), chromedp.WaitVisible(`#inbox-h`, chromedp.ByQuery))
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "drop the table"})
		id := r.Body["invocation_id"].(string)
		card := fmt.Sprintf(`[data-invocation=%q]`, id)
		owner.run("deny", previewShown(card),
			chromedp.Click(card+` button[aria-label^="Deny"]`, chromedp.ByQuery),
			chromedp.WaitVisible(card+` textarea`, chromedp.ByQuery),
			fill(card+` textarea`, "not on a Friday"))
		owner.shot("06-deny-reason")
		owner.run("confirm deny", chromedp.Click(card+` button.danger`, chromedp.ByQuery), chromedp.WaitNotPresent(card, chromedp.ByQuery))
		inv := b.Invocation(id)
		require.Equal(t, "denied", inv["status"])
		r = b.Do("GET", "/v1/invocations/"+id+"/events", b.Owner(), nil)
		require.Contains(t, string(r.Raw), "not on a Friday")
	})

	t.Run("EnvelopeUndo", func(t *testing.T) {
		r := b.Do("POST", "/v1/envelopes", b.Service(), map[string]any{
			"external_id": "digest-1", "tool": map[string]any{"source": "slack", "action": "send_message"},
			"args": map[string]any{"channel": "C0123456789", "text": "Daily digest"}, "approval": "required",
		})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		id := r.Body["action_id"].(string)
		owner.run("envelope page", chromedp.Navigate(br.base+"/console/#/envelopes/"+id), chromedp.WaitVisible(`#envp-h`, chromedp.ByQuery))
		require.Contains(t, owner.text(`main`), "required")
		owner.shot("07-envelope")
		owner.run("undo", chromedp.Click(`//button[normalize-space()="Undo"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"badge") and contains(., "result: skipped")]`, chromedp.BySearch))
		require.Equal(t, "cancelled", b.Invocation(id)["status"])
	})

	t.Run("DeadLetterReplayed", func(t *testing.T) {
		b.SetModes(map[string]string{"slack:send_message": "allow"})
		b.Slack.SetHandler(apptest.SlackError("channel_not_found"))
		r := b.Invoke("send_message", map[string]any{"channel": "C0000000001", "text": "lost"})
		require.Equal(t, http.StatusBadGateway, r.Status, string(r.Raw))
		id := r.Body["invocation"].(map[string]any)["id"].(string)
		b.Slack.SetHandler(apptest.SlackOK)
		row := fmt.Sprintf(`[data-dead-letter=%q]`, id)
		owner.run("operations", chromedp.Navigate(br.base+"/console/#/operations"), chromedp.WaitVisible(row, chromedp.ByQuery),
			chromedp.WaitVisible(`#rb-h`, chromedp.ByQuery))
		require.Contains(t, owner.text(`main`), "slack.minute")
		owner.shot("08-operations")
		owner.run("replay", chromedp.Click(row+` button[aria-label^="Replay"]`, chromedp.ByQuery), chromedp.WaitNotPresent(row, chromedp.ByQuery))
		b.WaitStatus(id, invocation.StatusCompleted, 10*time.Second)
		b.SetModes(map[string]string{})
	})

	t.Run("OrganizationPausedAndResumed", func(t *testing.T) {
		owner.run("operations", chromedp.Navigate(br.base+"/console/#/operations"), chromedp.WaitVisible(`#q-h`, chromedp.ByQuery))
		require.NotContains(t, owner.text(`main`), "Queues are shared", "River's queues are the operator's")
		owner.run("retention", chromedp.WaitVisible(`[data-table="action_invocations"]`, chromedp.ByQuery))
		require.Contains(t, owner.text(`[data-table="action_invocations"]`), "90 days", "the Operations page shows retention")
		owner.run("pause", chromedp.Click(`//button[normalize-space()="Pause this organization"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//button[normalize-space()="Resume this organization"]`, chromedp.BySearch))
		require.Contains(t, owner.text(`main`), "Paused since")
		require.Equal(t, true, b.Do("GET", "/v1/queues", b.Owner(), nil).Body["paused"])
		owner.run("resume", chromedp.Click(`//button[normalize-space()="Resume this organization"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//button[normalize-space()="Pause this organization"]`, chromedp.BySearch))
		require.Equal(t, false, b.Do("GET", "/v1/queues", b.Owner(), nil).Body["paused"])
	})

	t.Run("ConnectorDriftConfirmed", func(t *testing.T) {
		r := b.Do("POST", "/v1/connectors", b.Owner(), map[string]any{"name": "deployer", "url": mcp.URL, "transport": "remote_http"})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		id := r.Body["connector"].(map[string]any)["id"].(string)
		r = b.Do("PUT", "/v1/connectors/"+id+"/tools", b.Owner(), map[string]string{"deploy": "allow"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		mcp.changeDeploy() // the server changes the tool's definition
		row := `[data-tool="deploy"]`
		owner.run("connectors", chromedp.Navigate(br.base+"/console/#/connectors"), chromedp.WaitVisible(`#con-h`, chromedp.ByQuery),
			chromedp.Click(`//button[starts-with(normalize-space(), "Validate")]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(., "Reachable: tools")]`, chromedp.BySearch))
		owner.shot("09-connectors")
		owner.run("tool review", chromedp.Navigate(br.base+"/console/#/connectors/"+id), chromedp.WaitVisible(row+` .badge.drift`, chromedp.ByQuery))
		owner.shot("10-connector-drift")
		// The server changes deploy again after the page showed it: the
		// confirmation, for the definition shown, is refused and the page
		// shows the tools again; the next one is for what it shows now.
		mcp.addDeploy(`{"type":"object","properties":{"service":{"type":"string"},"region":{"type":"string"}},"required":["service"]}`)
		time.Sleep(2 * time.Millisecond) // past the tool list's cache
		owner.run("confirm changed", chromedp.Click(row+` button[aria-label="Confirm deploy"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`//*[@role="alert" and contains(., "changed since it was shown")]`, chromedp.BySearch))
		r = b.Do("GET", "/v1/connectors/"+id+"/tools", b.Owner(), nil)
		require.Contains(t, string(r.Raw), `"drifted":true`, "nothing was stored: %s", r.Raw)
		owner.run("confirm", chromedp.Click(row+` button[aria-label="Confirm deploy"]`, chromedp.ByQuery),
			chromedp.WaitNotPresent(row+` .badge.drift`, chromedp.ByQuery))
		r = b.Do("GET", "/v1/connectors/"+id+"/tools", b.Owner(), nil)
		var tools struct {
			Tools []struct {
				Name, ReviewedMode, ReviewedHash, Hash string
				Drifted                                bool
			}
		}
		require.NoError(t, json.Unmarshal(r.Raw, &tools))
		for _, tool := range tools.Tools {
			if tool.Name == "deploy" {
				require.False(t, tool.Drifted)
			}
		}
		require.Contains(t, string(r.Raw), `"reviewed_mode":"allow"`)
		require.NotContains(t, string(r.Raw), `"drifted":true`)
	})

	t.Run("Activity", func(t *testing.T) {
		owner.run("activity", chromedp.Navigate(br.base+"/console/#/activity"), chromedp.WaitVisible(`#activity-h`, chromedp.ByQuery),
			chromedp.WaitVisible(`table caption`, chromedp.ByQuery),
			fill(`#f-status`, "denied"),
			chromedp.Click(`//button[normalize-space()="Apply filters"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//caption[normalize-space()="1 invocation"]`, chromedp.BySearch))
		owner.shot("11-activity")
	})

	t.Run("AuditTrail", func(t *testing.T) {
		// The pause and resume above, and the tool review, were recorded.
		owner.run("audit", chromedp.Navigate(br.base+"/console/#/audit"), chromedp.WaitVisible(`#audit-h`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-action="organization.pause"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-action="connector.review_tools"]`, chromedp.ByQuery))
		require.Contains(t, owner.text(`[data-action="organization.pause"]`), "user-owner")
		owner.shot("11b-audit")
		owner.run("filter", fill(`#a-action`, "organization"),
			chromedp.Click(`//button[normalize-space()="Apply filters"]`, chromedp.BySearch),
			chromedp.WaitNotPresent(`[data-action="connector.review_tools"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-action="organization.resume"]`, chromedp.ByQuery))
		require.Equal(t, 2, owner.count(`tr[data-action]`))
		member := br.tab()
		defer member.close()
		member.signIn(b.Member())
		require.Equal(t, 0, member.count(`a[href="#/audit"]`), "no Audit page for members")
	})

	t.Run("PhoneWidth", func(t *testing.T) {
		phone := br.tab()
		defer phone.close()
		phone.phone = true
		phone.run("phone viewport", emulation.SetDeviceMetricsOverride(390, 844, 1, true))
		phone.signIn(b.Admin())
		// A long value with no space to break at is wrapped, not clipped.
		long := strings.Repeat("https://example.com/a/very/long/path/", 6)
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": long})
		card := fmt.Sprintf(`[data-invocation=%q]`, r.Body["invocation_id"].(string))
		phone.run("card", chromedp.WaitVisible(card, chromedp.ByQuery))
		var overflow bool
		phone.eval("no horizontal scroll", `document.documentElement.scrollWidth > document.documentElement.clientWidth`, &overflow)
		require.False(t, overflow, "the inbox fits a phone's width")
		var whole bool
		phone.eval("long value whole", fmt.Sprintf(`[...document.querySelectorAll(%q)].some(el => el.textContent === %q && el.scrollWidth <= el.clientWidth)`,
			card+" .field .value", long), &whole)
		require.True(t, whole, "the long value is shown whole, wrapped at the phone's width")
		var icon string
		phone.eval("favicon", `document.querySelector('link[rel="icon"]').getAttribute("href")`, &icon)
		require.True(t, strings.HasPrefix(icon, "data:image/svg+xml,"), "the console has its own favicon, inline: %s", icon)
		phone.shot("12-phone-inbox")
	})

	previewPages(t, br, owner)
	adminPages(t, br, owner, member, mcp)
	grantPages(t, br, owner)

	t.Run("ExpiredTokenBackToSignIn", func(t *testing.T) {
		// The verifier allows 30 s of clock leeway: a token that expired
		// 22 s ago still signs in, and is refused 8 s later.
		tok, err := auth.Mint(b.Secret, auth.Claims{Org: apptest.Org, Kind: auth.KindUser, Role: auth.RoleAdmin, RegisteredClaims: jwt.RegisteredClaims{Subject: "leaving"}}, -22*time.Second)
		require.NoError(t, err)
		expiring := br.tab()
		defer expiring.close()
		expiring.signIn(tok)
		time.Sleep(9 * time.Second)
		expiring.run("navigate after expiry", chromedp.Navigate(br.base+"/console/#/activity"),
			chromedp.WaitVisible(`#token`, chromedp.ByQuery))
		require.Contains(t, expiring.text(`main`), "expired")
		var stored string
		expiring.eval("token dropped", `String(sessionStorage.getItem("outboxd.token"))`, &stored)
		require.Equal(t, "null", stored)
		expiring.shot("13-expired")
	})

}

// toolServer is a loopback MCP server whose deploy tool can change.
type toolServer struct {
	*httptest.Server
	sdk *mcpsdk.Server
}

func newToolServer(t *testing.T) *toolServer {
	s := &toolServer{sdk: mcpsdk.NewServer(&mcpsdk.Implementation{Name: "tools", Version: "v1"}, nil)}
	s.addDeploy(`{"type":"object","properties":{"service":{"type":"string"}},"required":["service"]}`)
	handler := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return s.sdk }, &mcpsdk.StreamableHTTPOptions{Stateless: true})
	s.Server = httptest.NewServer(handler)
	t.Cleanup(s.Close)
	return s
}

func (s *toolServer) addDeploy(schema string) {
	s.sdk.AddTool(&mcpsdk.Tool{Name: "deploy", Description: "Deploy a service.", InputSchema: json.RawMessage(schema)},
		func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "deployed"}}}, nil
		})
}

// changeDeploy gives deploy a new parameter: its definition hash changes.
func (s *toolServer) changeDeploy() {
	s.addDeploy(`{"type":"object","properties":{"service":{"type":"string"},"force":{"type":"boolean"}},"required":["service"]}`)
}
