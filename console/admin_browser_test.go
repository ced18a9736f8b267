package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
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
