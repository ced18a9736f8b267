package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database/databasetest"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// adminPages drives the administration pages (issue 28) with the suite's
// one outboxd and browser: owner and member are signed-in tabs.
func adminPages(t *testing.T, br *browser, owner, member *tab, mcp *toolServer) {
	b := br.b
	t.Run("ModesOrgAndAutomation", func(t *testing.T) {
		row := `[data-action="slack:send_message"]`
		sel := `#mode-slack_send_message`
		owner.run("modes", chromedp.Navigate(br.base+"/console/#/modes"), chromedp.WaitVisible(row, chromedp.ByQuery))
		require.Contains(t, owner.text(row), "require_approval", "R2 infers require_approval")
		owner.run("set deny", fill(sel, "deny"), chromedp.WaitVisible(row+`.changed`, chromedp.ByQuery),
			chromedp.Click(`//button[normalize-space()="Save changes"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "Saved 1 change")]`, chromedp.BySearch))
		require.Contains(t, owner.text(row+` [data-effective]`), "deny")
		owner.shot("20-modes")
		require.Equal(t, "deny", b.Do("GET", "/v1/action-modes", b.Owner(), nil).Body["slack:send_message"])
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "mode deny"})
		require.Equal(t, http.StatusForbidden, r.Status, string(r.Raw))
		require.Contains(t, string(r.Raw), "org_default")

		// Back to allow: the next invocation runs at once.
		owner.run("set allow", fill(sel, "allow"), chromedp.Click(`//button[normalize-space()="Save changes"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "Saved 1 change")]`, chromedp.BySearch),
			chromedp.WaitNotPresent(row+`.changed`, chromedp.ByQuery))
		r = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "mode allow"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		inv := r.Body["invocation"].(map[string]any)
		require.Equal(t, "allow", inv["mode"])
		require.Equal(t, "org_default", inv["mode_source"])

		// A save keeps what another admin stored meanwhile (read-modify-write).
		b.SetModes(map[string]string{"slack:send_message": "allow", "demo:echo": "deny"})
		owner.run("automation scope", fill(`#modes-scope`, "automation-1"), chromedp.Click(`//button[normalize-space()="Show scope"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//h1[contains(., "automation automation-1")]`, chromedp.BySearch),
			chromedp.WaitVisible(row, chromedp.ByQuery),
			fill(sel, "require_approval"), chromedp.Click(`//button[normalize-space()="Save changes"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "automation automation-1")]`, chromedp.BySearch))
		require.Equal(t, "require_approval", b.Do("GET", "/v1/automations/automation-1/action-modes", b.Owner(), nil).Body["slack:send_message"])
		require.Equal(t, "deny", b.Do("GET", "/v1/action-modes", b.Owner(), nil).Body["demo:echo"], "the org's set is untouched")
		env := b.Do("POST", "/v1/envelopes", b.Service(), map[string]any{
			"external_id": "modes-1", "tool": map[string]any{"source": "slack", "action": "send_message"},
			"args": map[string]any{"channel": "C0123456789", "text": "automation scope"},
		})
		require.Equal(t, http.StatusCreated, env.Status, string(env.Raw))
		require.Equal(t, "automation_override", env.Body["mode_source"])
		require.Equal(t, "require_approval", env.Body["mode"])
		b.SetModes(map[string]string{"slack:send_message": "allow"})
	})

	t.Run("CredentialStoredAndUsed", func(t *testing.T) {
		owner.run("credentials", chromedp.Navigate(br.base+"/console/#/credentials"), chromedp.WaitVisible(`#cred-h`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-credential="slack"]`, chromedp.ByQuery))
		// The form checks what the API checks: a token is required.
		owner.run("empty token", fill(`#cred-integration`, "slack"), chromedp.Click(`//button[normalize-space()="Replace credential"]`, chromedp.BySearch),
			chromedp.WaitVisible(`#cred-token-err`, chromedp.ByQuery))
		require.Contains(t, owner.text(`#cred-token-err`), "token is required")
		owner.run("replace", fill(`#cred-token`, "xoxb-from-the-console"),
			chromedp.Click(`//button[normalize-space()="Replace credential"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "Replaced the slack credential")]`, chromedp.BySearch))
		require.NotContains(t, owner.text(`main`), "xoxb-from-the-console", "a token is never shown back")
		var value string
		owner.eval("field emptied", `document.querySelector("#cred-token").value`, &value)
		require.Empty(t, value)
		owner.shot("21-credentials")
		before := len(b.Slack.Posts())
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "with the new token"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		posts := b.Slack.Posts()
		require.Greater(t, len(posts), before)
		require.Equal(t, "Bearer xoxb-from-the-console", posts[len(posts)-1].Authorization)

		// A user's credential: stored beside the organization's, deleted alone.
		owner.run("store a user's", fill(`#cred-user`, "u-9"), fill(`#cred-token`, "xoxb-user-9"),
			chromedp.Click(`//button[normalize-space()="Store credential"]`, chromedp.BySearch),
			chromedp.WaitVisible(`[data-credential="slack/u-9"]`, chromedp.ByQuery))
		require.Contains(t, owner.text(`[data-credential="slack/u-9"]`), "owner")
		owner.run("delete the user's", chromedp.Click(`button[aria-label="Delete slack of u-9"]`, chromedp.ByQuery),
			chromedp.Click(`button[data-confirm]`, chromedp.ByQuery),
			chromedp.WaitNotPresent(`[data-credential="slack/u-9"]`, chromedp.ByQuery))
		require.Equal(t, 1, owner.count(`[data-credential="slack"]`), "the organization's is left")
		require.Len(t, b.Do("GET", "/v1/credentials", b.Owner(), nil).Body["credentials"], 1)
	})

	t.Run("FirstCredentialOfAFreshOrganization", func(t *testing.T) {
		// An organization with no credential at all: the catalog lists none
		// of the providers, yet the console offers each to set modes for
		// and to store the first credential of.
		const org = "org-fresh"
		fresh := br.tab()
		defer fresh.close()
		token := b.Token(auth.Claims{Org: org, Kind: auth.KindUser, Role: auth.RoleOwner, RegisteredClaims: jwt.RegisteredClaims{Subject: "owner-fresh"}})
		sandbox := b.Token(auth.Claims{Org: org, Kind: auth.KindSandbox, SessionID: apptest.Session})
		require.Empty(t, b.Do("GET", "/v1/actions/available", token, nil).Body["actions"], "nothing in the catalog yet")
		fresh.signIn(token)

		// Modes first: the actions of a provider with no credential are
		// listed, marked, and their modes are set before it is stored.
		row := `[data-action="sentry:update_issue"]`
		fresh.run("modes", chromedp.Navigate(br.base+"/console/#/modes"), chromedp.WaitVisible(row, chromedp.ByQuery))
		require.Equal(t, 1, fresh.count(row+` [data-no-credential]`), "marked as having no credential")
		require.Equal(t, 1, fresh.count(`[data-action="github:create_issue"]`))
		fresh.shot("20b-modes-no-credential")
		fresh.run("set deny", fill(`#mode-sentry_update_issue`, "deny"), chromedp.WaitVisible(row+`.changed`, chromedp.ByQuery),
			chromedp.Click(`//button[normalize-space()="Save changes"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "Saved 1 change")]`, chromedp.BySearch))
		require.Equal(t, "deny", b.Do("GET", "/v1/action-modes", token, nil).Body["sentry:update_issue"])

		fresh.run("credentials", chromedp.Navigate(br.base+"/console/#/credentials"), chromedp.WaitVisible(`#cred-h`, chromedp.ByQuery),
			chromedp.WaitVisible(`//*[contains(., "No credentials stored.")]`, chromedp.BySearch))
		var options []string
		fresh.eval("providers offered", `[...document.querySelectorAll("#cred-integration option")].map(o => o.value)`, &options)
		require.Equal(t, []string{"github", "linear", "sentry", "slack"}, options, "every provider, though none has a credential")
		require.Contains(t, fresh.text(`#cred-integration`), "Sentry (sentry)")
		fresh.shot("21b-first-credential")
		fresh.run("store the first", fill(`#cred-integration`, "sentry"), fill(`#cred-token`, "sntrys_first_from_the_console"),
			chromedp.Click(`//button[normalize-space()="Store credential"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "Stored the sentry credential")]`, chromedp.BySearch),
			chromedp.WaitVisible(`[data-credential="sentry"]`, chromedp.ByQuery))
		require.NotContains(t, fresh.text(`main`), "sntrys_first_from_the_console", "a token is never shown back")
		creds := b.Do("GET", "/v1/credentials", token, nil).Body["credentials"].([]any)
		require.Len(t, creds, 1)
		require.Equal(t, "sentry", creds[0].(map[string]any)["integration"])
		require.Len(t, b.Do("GET", "/v1/credentials", b.Owner(), nil).Body["credentials"], 1, "the suite's organization keeps its one (slack)")

		// The agent's catalog has the provider now, with the mode set before.
		r := b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/available", sandbox, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		var found bool
		for _, a := range r.Body["actions"].([]any) {
			if a := a.(map[string]any); a["source"] == "sentry" && a["action"] == "update_issue" {
				found = true
				require.Equal(t, "deny", a["mode"])
				require.Nil(t, a["disabled"])
			}
		}
		require.True(t, found, "sentry.update_issue is in the agent's catalog: %s", r.Raw)
		fresh.run("modes again", chromedp.Navigate(br.base+"/console/#/modes"), chromedp.WaitVisible(row, chromedp.ByQuery))
		require.Zero(t, fresh.count(row+` [data-no-credential]`), "no longer marked")
		require.Equal(t, 1, fresh.count(`[data-action="github:create_issue"] [data-no-credential]`))
	})

	t.Run("WebhookCreatedRotatedAndDelivered", func(t *testing.T) {
		received := make(chan string, 16)
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case received <- r.Header.Get("webhook-id"):
			default:
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(hook.Close)
		owner.run("webhooks", chromedp.Navigate(br.base+"/console/#/webhooks"), chromedp.WaitVisible(`#wh-h`, chromedp.ByQuery),
			// The form checks what the API checks.
			fill(`#wh-new-url`, "ftp://example.com/x"), chromedp.Click(`//button[normalize-space()="Create webhook"]`, chromedp.BySearch),
			chromedp.WaitVisible(`#wh-new-url-err`, chromedp.ByQuery))
		require.Contains(t, owner.text(`#wh-new-url-err`), "http")
		owner.run("create", fill(`#wh-new-url`, hook.URL+"/hooks"), fill(`#wh-new-description`, "console test"),
			chromedp.Click(`//button[normalize-space()="Create webhook"]`, chromedp.BySearch),
			chromedp.WaitVisible(`[data-secret]`, chromedp.ByQuery))
		first := owner.text(`[data-secret]`)
		require.True(t, strings.HasPrefix(strings.TrimSpace(first), "whsec_"), first)
		owner.shot("22-webhook-secret")
		owner.run("secret acknowledged", chromedp.Click(`//button[normalize-space()="I have stored it"]`, chromedp.BySearch),
			chromedp.WaitNotPresent(`[data-secret]`, chromedp.ByQuery))
		require.NotContains(t, owner.text(`main`), strings.TrimSpace(first), "the secret is shown once")
		row := fmt.Sprintf(`[data-webhook=%q]`, hook.URL+"/hooks")
		owner.run("open", chromedp.Click(row+` a`, chromedp.ByQuery), chromedp.WaitVisible(`#whp-h`, chromedp.ByQuery))

		// An event is delivered, and the delivery is listed with its status.
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "webhook"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		<-received
		owner.run("delivery listed", chromedp.Poll(`(() => { if (document.querySelector(".delivery-delivered")) return true;
			[...document.querySelectorAll("button")].find(b => b.textContent === "Refresh deliveries").click(); return false })()`, nil,
			chromedp.WithPollingInterval(200*time.Millisecond)))
		require.Contains(t, owner.text(`main`), "action_completed")
		owner.shot("23-webhook-deliveries")

		owner.run("rotate", chromedp.Click(`button[aria-label="Rotate secret"]`, chromedp.ByQuery),
			chromedp.Click(`button[data-confirm]`, chromedp.ByQuery), chromedp.WaitVisible(`[data-secret]`, chromedp.ByQuery))
		second := owner.text(`[data-secret]`)
		require.True(t, strings.HasPrefix(strings.TrimSpace(second), "whsec_"))
		require.NotEqual(t, first, second)

		// Disabled, it says so; enabled again, it gets deliveries again.
		owner.run("disable", chromedp.Click(`button[aria-label="Disable"]`, chromedp.ByQuery), chromedp.Click(`button[data-confirm]`, chromedp.ByQuery),
			chromedp.WaitVisible(`//button[normalize-space()="Enable"]`, chromedp.BySearch))
		require.Contains(t, owner.text(`main`), "gets no deliveries")
		owner.run("enable", chromedp.Click(`//button[normalize-space()="Enable"]`, chromedp.BySearch),
			chromedp.WaitVisible(`button[aria-label="Disable"]`, chromedp.ByQuery))
		wr := b.Do("GET", "/v1/webhooks", b.Owner(), nil)
		require.Contains(t, string(wr.Raw), `"enabled":true`)
		owner.run("delete", chromedp.Click(`button[aria-label="Delete"]`, chromedp.ByQuery), chromedp.Click(`button[data-confirm]`, chromedp.ByQuery),
			chromedp.WaitVisible(`#wh-h`, chromedp.ByQuery), chromedp.WaitNotPresent(row, chromedp.ByQuery))
	})

	t.Run("ConnectorWithSecretAddedAndReviewed", func(t *testing.T) {
		secured := newSecuredToolServer(t, "mcp-s3cret")
		owner.run("connectors", chromedp.Navigate(br.base+"/console/#/connectors"), chromedp.WaitVisible(`#con-new-h`, chromedp.ByQuery),
			fill(`#con-new-name`, "secured"), fill(`#con-new-url`, secured.URL), fill(`#con-new-auth`, "bearer"),
			chromedp.WaitVisible(`#con-new-secret`, chromedp.ByQuery),
			chromedp.Click(`//button[normalize-space()="Add connector"]`, chromedp.BySearch),
			chromedp.WaitVisible(`#con-new-secret-err`, chromedp.ByQuery))
		require.Contains(t, owner.text(`#con-new-secret-err`), "auth.secret is required")
		owner.run("add", fill(`#con-new-secret`, "mcp-s3cret"), chromedp.Click(`//button[normalize-space()="Add connector"]`, chromedp.BySearch),
			chromedp.WaitVisible(`[data-tool="lookup"]`, chromedp.ByQuery))
		require.NotContains(t, owner.text(`main`), "mcp-s3cret", "the secret is never shown back")
		var value string
		owner.eval("secret field empty", `document.querySelector("#con-edit-secret").value`, &value)
		require.Empty(t, value)
		owner.shot("24-connector-added")
		owner.run("review", chromedp.Click(`[data-tool="lookup"] button[aria-label="Confirm lookup"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "Confirmed lookup")]`, chromedp.BySearch))
		var list struct {
			Connectors []struct{ ID, Name string }
		}
		require.NoError(t, json.Unmarshal(b.Do("GET", "/v1/connectors", b.Owner(), nil).Raw, &list))
		var id string
		for _, c := range list.Connectors {
			if c.Name == "secured" {
				id = c.ID
			}
		}
		require.NotEmpty(t, id)
		require.Contains(t, string(b.Do("GET", "/v1/connectors/"+id+"/tools", b.Owner(), nil).Raw), `"reviewed_mode":"allow"`)

		// The risk policy: a tier the API refuses is caught by the form;
		// one it takes is stored, and reclassifies the tool.
		owner.run("bad tier", fill(`#con-edit-risk-tools`, "lookup = severe"), chromedp.Click(`//button[normalize-space()="Save connector"]`, chromedp.BySearch),
			chromedp.WaitVisible(`#con-edit-risk-tools-err`, chromedp.ByQuery))
		require.Contains(t, owner.text(`#con-edit-risk-tools-err`), "severe")
		owner.run("risk policy", fill(`#con-edit-risk-tools`, "lookup = R3"), fill(`#con-edit-risk-default`, "R2"),
			chromedp.Click(`//button[normalize-space()="Save connector"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "Saved secured")]`, chromedp.BySearch))
		got := b.Do("GET", "/v1/connectors/"+id, b.Owner(), nil)
		require.Equal(t, map[string]any{"default": "R2", "tools": map[string]any{"lookup": "R3"}}, got.Body["connector"].(map[string]any)["risk_policy"], string(got.Raw))
		owner.run("the form shows it again", chromedp.Navigate(br.base+"/console/#/connectors/"+id), chromedp.WaitVisible(`#con-edit-risk-tools`, chromedp.ByQuery))
		var tools string
		owner.eval("risk tools", `document.querySelector("#con-edit-risk-tools").value`, &tools)
		require.Equal(t, "lookup = R3", tools)

		// A wrong secret: validation reports it; the right one again fixes it.
		owner.run("wrong secret", fill(`#con-edit-secret`, "wrong"), chromedp.Click(`//button[normalize-space()="Save connector"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "Saved secured")]`, chromedp.BySearch),
			chromedp.Navigate(br.base+"/console/#/connectors"), chromedp.WaitVisible(`#con-h`, chromedp.ByQuery),
			chromedp.Click(`//li[.//a[normalize-space()="secured"]]//button[starts-with(normalize-space(), "Validate")]`, chromedp.BySearch),
			chromedp.WaitVisible(`//li[.//a[normalize-space()="secured"]]//*[contains(@class,"alert-error")]`, chromedp.BySearch))
		owner.shot("25-connector-unreachable")
		owner.run("delete", chromedp.Navigate(br.base+"/console/#/connectors/"+id), chromedp.WaitVisible(`#con-edit-name`, chromedp.ByQuery),
			chromedp.Click(`button[aria-label="Delete connector"]`, chromedp.ByQuery), chromedp.Click(`button[data-confirm]`, chromedp.ByQuery),
			chromedp.WaitVisible(`#con-h`, chromedp.ByQuery))
		require.Equal(t, http.StatusNotFound, b.Do("GET", "/v1/connectors/"+id, b.Owner(), nil).Status)
	})

	t.Run("DatabaseRegisteredAndQueried", func(t *testing.T) {
		tg := databasetest.NewTarget(t)
		bad := tg.URL + "?sslrootcert=/etc/passwd"
		if strings.Contains(tg.URL, "?") {
			bad = tg.URL + "&sslrootcert=/etc/passwd"
		}
		owner.run("databases", chromedp.Navigate(br.base+"/console/#/databases"), chromedp.WaitVisible(`#db-new-h`, chromedp.ByQuery),
			fill(`#db-new-name`, "reports"), fill(`#db-new-maxrows`, "0"),
			chromedp.Click(`//button[normalize-space()="Register database"]`, chromedp.BySearch),
			chromedp.WaitVisible(`#db-new-maxrows-err`, chromedp.ByQuery))
		require.Contains(t, owner.text(`#db-new-maxrows-err`), "max_rows must be from 1 to 10000", "the form checks what the API checks")
		require.Contains(t, owner.text(`#db-new-url-err`), "url is required")
		// A rule only the API knows: its 400 names the field, shown next to it.
		owner.run("refused parameter", fill(`#db-new-maxrows`, "5"), fill(`#db-new-url`, bad),
			chromedp.Click(`//button[normalize-space()="Register database"]`, chromedp.BySearch),
			chromedp.WaitVisible(`#db-new-url-err`, chromedp.ByQuery))
		require.Contains(t, owner.text(`#db-new-url-err`), "sslrootcert")
		require.Zero(t, owner.count(`#db-new-maxrows-err`))
		var invalid string
		owner.eval("aria-invalid", `document.querySelector("#db-new-url").getAttribute("aria-invalid")`, &invalid)
		require.Equal(t, "true", invalid)
		owner.shot("26-database-field-error")
		owner.run("register", fill(`#db-new-url`, tg.URL), chromedp.Click(`//button[normalize-space()="Register database"]`, chromedp.BySearch),
			chromedp.WaitVisible(`[data-database="reports"]`, chromedp.ByQuery))
		require.NotContains(t, owner.text(`main`), tg.Password, "the URL is never shown back")
		owner.run("test", chromedp.Click(`button[aria-label="Test reports"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`[data-database-test="reports"] .alert-ok`, chromedp.ByQuery))
		require.Contains(t, owner.text(`[data-database-test="reports"]`), "Reachable")
		owner.shot("27-databases")
		var list struct {
			Databases []struct {
				SourceID string `json:"source_id"`
			}
		}
		require.NoError(t, json.Unmarshal(b.Do("GET", "/v1/databases", b.Owner(), nil).Raw, &list))
		require.Len(t, list.Databases, 1)
		source := list.Databases[0].SourceID
		r := b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invoke", b.Sandbox(), map[string]any{
			"integration": source, "action": "query", "params": map[string]any{"sql": "select 41 + $1::int as answer", "params": []any{1}},
		})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Contains(t, string(r.Raw), `"rows":[[42]]`)

		owner.run("edit", chromedp.Click(`button[aria-label="Edit reports"]`, chromedp.ByQuery), chromedp.WaitVisible(`[id^="db-edit-"][id$="-maxrows"]`, chromedp.ByQuery),
			fill(`[id^="db-edit-"][id$="-maxrows"]`, "7"), chromedp.Click(`//button[normalize-space()="Save database"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "Saved reports")]`, chromedp.BySearch))
		require.Contains(t, owner.text(`[data-database="reports"]`), "7")
		owner.run("delete", chromedp.Click(`button[aria-label="Delete reports"]`, chromedp.ByQuery), chromedp.Click(`button[data-confirm]`, chromedp.ByQuery),
			chromedp.WaitNotPresent(`[data-database="reports"]`, chromedp.ByQuery))
		require.Contains(t, string(b.Do("GET", "/v1/databases", b.Owner(), nil).Raw), `"databases":[]`)
	})

	t.Run("SlackChannelAndApprovers", func(t *testing.T) {
		owner.run("slack", chromedp.Navigate(br.base+"/console/#/slack"), chromedp.WaitVisible(`#slack-ch-h`, chromedp.ByQuery),
			fill(`#slack-channel`, "C0999999999"), chromedp.Click(`//button[normalize-space()="Save channel"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "Channel set")]`, chromedp.BySearch),
			chromedp.Click(`//button[normalize-space()="Add approver"]`, chromedp.BySearch),
			chromedp.Click(`//button[normalize-space()="Save approvers"]`, chromedp.BySearch),
			chromedp.WaitVisible(`#ap-slack-0-err`, chromedp.ByQuery),
			fill(`#ap-slack-0`, "U0APPROVER"), fill(`#ap-user-0`, "alice"), fill(`#ap-role-0`, "owner"),
			chromedp.Click(`//button[normalize-space()="Save approvers"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "Saved 1 approver")]`, chromedp.BySearch))
		owner.shot("28-slack")
		r := b.Do("GET", "/v1/approvers/slack", b.Owner(), nil)
		require.Equal(t, "C0999999999", r.Body["channel"])
		require.Equal(t, map[string]any{"U0APPROVER": map[string]any{"user_id": "alice", "role": "owner"}}, r.Body["approvers"])
		owner.run("reset channel", chromedp.Click(`button[aria-label="Reset channel"]`, chromedp.ByQuery), chromedp.Click(`button[data-confirm]`, chromedp.ByQuery),
			chromedp.WaitVisible(`//*[contains(@class,"alert-ok") and contains(., "Channel reset")]`, chromedp.BySearch))
		require.Nil(t, b.Do("GET", "/v1/notifications/slack", b.Owner(), nil).Body["channel"])

		// An admin sets the channel but only reads the approvers, as the API allows.
		adm := br.tab()
		defer adm.close()
		adm.signIn(b.Admin())
		adm.run("admin's slack page", chromedp.Navigate(br.base+"/console/#/slack"), chromedp.WaitVisible(`[data-approver="0"]`, chromedp.ByQuery))
		require.Contains(t, adm.text(`main`), "Only an owner can change the approvers")
		require.Contains(t, adm.text(`[data-approver="0"]`), "U0APPROVER")
		require.Zero(t, adm.count(`#ap-slack-0`), "no approver inputs for an admin")
		require.Equal(t, 1, adm.count(`#slack-channel`))
	})

	t.Run("StaleSettingsRefused", func(t *testing.T) {
		// Another admin changes the quiet hours after the owner's page read
		// them: the owner's save is refused (412), says so, and shows theirs.
		defer b.Do("PUT", "/v1/quiet-hours", b.Owner(), map[string]any{"windows": []any{}})
		owner.run("operations", chromedp.Navigate(br.base+"/console/#/operations"),
			chromedp.WaitVisible(`//button[normalize-space()="Save quiet hours"]`, chromedp.BySearch))
		r := b.Do("PUT", "/v1/quiet-hours", b.Admin(), map[string]any{"windows": []map[string]string{{"bucket": "slack.minute", "time_zone": "UTC", "start": "01:00", "end": "01:30"}}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		owner.run("stale save", chromedp.Click(`//button[normalize-space()="Add window"]`, chromedp.BySearch),
			chromedp.WaitVisible(`#qh-z-0`, chromedp.ByQuery), fill(`#qh-z-0`, "UTC"),
			chromedp.Click(`//button[normalize-space()="Save quiet hours"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-error") and contains(., "changed the quiet hours meanwhile")]`, chromedp.BySearch))
		var start string
		owner.eval("theirs shown", `document.querySelector("#qh-s-0").value`, &start)
		require.Equal(t, "01:00", start)
		require.Zero(t, owner.count(`#qh-s-1`), "the owner's window is gone with the reload")
		owner.shot("28b-quiet-hours-stale")
		windows := b.Do("GET", "/v1/quiet-hours", b.Owner(), nil).Body["windows"].([]any)
		require.Len(t, windows, 1, "the other admin's change stands")
		require.Equal(t, "slack.minute", windows[0].(map[string]any)["bucket"])

		// The Slack channel likewise.
		owner.run("slack", chromedp.Navigate(br.base+"/console/#/slack"), chromedp.WaitVisible(`#slack-channel`, chromedp.ByQuery))
		r = b.Do("PUT", "/v1/notifications/slack", b.Admin(), map[string]any{"channel": "C0THEIRS"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		defer b.Do("PUT", "/v1/notifications/slack", b.Owner(), map[string]any{"channel": nil})
		owner.run("stale channel", fill(`#slack-channel`, "C0MINE"), chromedp.Click(`//button[normalize-space()="Save channel"]`, chromedp.BySearch),
			chromedp.WaitVisible(`//*[contains(@class,"alert-error") and contains(., "changed the Slack settings meanwhile")]`, chromedp.BySearch))
		require.Equal(t, "C0THEIRS", b.Do("GET", "/v1/notifications/slack", b.Owner(), nil).Body["channel"])
	})

	t.Run("MemberReadsButCannotChange", func(t *testing.T) {
		member.run("modes", chromedp.Navigate(br.base+"/console/#/modes"), chromedp.WaitVisible(`[data-action="slack:send_message"]`, chromedp.ByQuery))
		require.Zero(t, member.count(`main select`), "a member gets no mode controls")
		require.Zero(t, member.count(`main button.primary`), "nor a save button")
		require.Contains(t, member.text(`main`), "only an admin or owner can change them")
		nav := member.text(`header nav`)
		for _, admin := range []string{"Credentials", "Webhooks", "Databases", "Slack"} {
			require.NotContains(t, nav, admin)
		}
		member.shot("29-modes-member")
		for _, c := range []struct{ method, path, body string }{
			{"PUT", "/v1/action-modes", `{"slack:send_message":"allow"}`},
			{"PUT", "/v1/credentials/slack", `{"token":"xoxb-member"}`},
			{"POST", "/v1/connectors", `{"name":"m","url":"http://127.0.0.1:1","transport":"remote_http"}`},
			{"POST", "/v1/webhooks", `{"url":"http://127.0.0.1:1","events":["action_completed"],"description":""}`},
			{"POST", "/v1/databases", `{"name":"m","url":"postgres://u@127.0.0.1/db"}`},
			{"PUT", "/v1/notifications/slack", `{"channel":"C1"}`},
		} {
			var status int
			member.eval("forced "+c.path, fmt.Sprintf(`fetch(%q, {method: %q, headers: {"Authorization": "Bearer " + sessionStorage.getItem("outboxd.token"),
				"Content-Type": "application/json"}, body: %q}).then(r => r.status)`, c.path, c.method, c.body), &status)
			require.Equal(t, http.StatusForbidden, status, "%s %s", c.method, c.path)
		}
		member.run("credentials refused", chromedp.Navigate(br.base+"/console/#/credentials"),
			chromedp.WaitVisible(`//*[contains(@class,"alert-error")]`, chromedp.BySearch))
		require.True(t, strings.Contains(member.text(`main`), "403"))
	})
}

// newSecuredToolServer is a loopback MCP server with a read-only lookup
// tool that answers only requests bearing secret.
func newSecuredToolServer(t *testing.T, secret string) *httptest.Server {
	sdk := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "secured", Version: "v1"}, nil)
	sdk.AddTool(&mcpsdk.Tool{Name: "lookup", Description: "Look a thing up.", Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
		func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "found"}}}, nil
		})
	mcp := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return sdk }, &mcpsdk.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+secret {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}
