package console_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// grantPages approves from the inbox card with a grant (issue 26 item 5),
// sees it let the next invocation to the same channel through and not one
// to another channel, and revokes it on the grants page. owner is a
// signed-in tab of the suite.
func grantPages(t *testing.T, br *browser, owner *tab) {
	b := br.b
	t.Run("GrantFromTheCard", func(t *testing.T) {
		b.SetModes(map[string]string{"slack:send_message": "require_approval"})
		defer b.SetModes(map[string]string{"slack:send_message": "allow"})
		owner.run("inbox", chromedp.Navigate(br.base+"/console/#/inbox"), chromedp.WaitVisible(`#inbox-h`, chromedp.ByQuery))
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "first of a few"})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		id := r.Body["invocation_id"].(string)
		card := fmt.Sprintf(`[data-invocation=%q]`, id)
		owner.run("card", previewShown(card))
		always := owner.text(card + ` button[aria-label^="Approve and always allow"]`)
		require.Contains(t, always, "permanent", "the card says plainly that always is permanent")

		owner.run("open the grant form", chromedp.Click(card+` button[aria-label="Approve and grant more of slack.send_message"]`, chromedp.ByQuery),
			chromedp.WaitVisible(card+` form.grant-form`, chromedp.ByQuery))
		require.Contains(t, owner.text(card+` form.grant-form`), "session session-1")
		owner.run("fill", fill(card+` input[aria-label="How many more"]`, "1"), fill(card+` input[aria-label="For how many minutes"]`, "15"),
			chromedp.Click(card+` input[name="fixed"][value="channel"]`, chromedp.ByQuery))
		owner.shot("30-grant-form")
		owner.run("approve and grant", chromedp.Click(card+` form.grant-form button[type="submit"]`, chromedp.ByQuery),
			chromedp.WaitNotPresent(card, chromedp.ByQuery))

		list := b.Do("GET", "/v1/grants?active=true", b.Owner(), nil)
		require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
		require.Len(t, list.Body["grants"], 1)
		g := list.Body["grants"].([]any)[0].(map[string]any)
		require.Equal(t, id, g["created_from"])
		require.Equal(t, float64(1), g["granted"])
		require.Equal(t, map[string]any{"channel": "C0123456789"}, g["fixed"])

		// Another channel waits for a human; the same channel runs.
		other := b.Invoke("send_message", map[string]any{"channel": "C0000000009", "text": "elsewhere"})
		require.Equal(t, http.StatusAccepted, other.Status, string(other.Raw))
		defer b.Do("POST", "/v1/invocations/"+other.Body["invocation_id"].(string)+"/deny", b.Owner(), map[string]string{"reason": "test over"})
		same := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "second"})
		require.Equal(t, http.StatusOK, same.Status, string(same.Raw))
		inv := same.Body["invocation"].(map[string]any)
		require.Equal(t, g["id"], inv["grant_id"])
		owner.run("invocation page shows the grant", chromedp.Navigate(br.base+"/console/#/invocations/"+inv["id"].(string)),
			chromedp.WaitVisible(fmt.Sprintf(`[data-grant-id=%q]`, g["id"]), chromedp.ByQuery))

		// The grants page lists it (used up: ended) and revokes a live one.
		second := b.Invoke("send_message", map[string]any{"channel": "C0000000009", "text": "another"})
		require.Equal(t, http.StatusAccepted, second.Status, string(second.Raw))
		r = b.Do("POST", "/v1/invocations/"+second.Body["invocation_id"].(string)+"/approve", b.Owner(),
			map[string]any{"mode": "once", "grant": map[string]any{"count": 3, "minutes": 10}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		live := r.Body["grant"].(map[string]any)["id"].(string)
		row := fmt.Sprintf(`[data-grant=%q]`, live)
		owner.run("grants page", chromedp.Navigate(br.base+"/console/#/grants"), chromedp.WaitVisible(row, chromedp.ByQuery))
		require.Contains(t, owner.text(row), "3 of 3")
		owner.shot("31-grants")
		owner.run("revoke", chromedp.Click(row+` button[aria-label="Revoke grant of slack.send_message"]`, chromedp.ByQuery),
			chromedp.Click(row+` button[data-confirm]`, chromedp.ByQuery),
			chromedp.WaitNotPresent(row, chromedp.ByQuery))
		all := b.Do("GET", "/v1/grants", b.Owner(), nil)
		for _, x := range all.Body["grants"].([]any) {
			if x.(map[string]any)["id"] == live {
				require.Equal(t, "manual", x.(map[string]any)["revoke_reason"])
			}
		}
		after := b.Invoke("send_message", map[string]any{"channel": "C0000000009", "text": "after revocation"})
		require.Equal(t, http.StatusAccepted, after.Status, "a revoked grant lets nothing through: %s", after.Raw)
		defer b.Do("POST", "/v1/invocations/"+after.Body["invocation_id"].(string)+"/deny", b.Owner(), map[string]string{"reason": "test over"})
	})
}
