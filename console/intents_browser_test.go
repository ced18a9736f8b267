package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// TestBrowser_EditThenApprove: an admin changes a pending invocation's
// params in the inbox and approves the edited request; the provider gets
// the edited params and the timeline says who edited them.
func TestBrowser_EditThenApprove(t *testing.T) {
	b := apptest.Start(t, nil)
	br := newBrowser(t, b)
	b.StoreSlackToken("xoxb-console-edit")

	owner := br.tab()
	defer owner.close()
	owner.signIn(b.Owner())

	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "ship it"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	short := r.Body["invocation"].(map[string]any)["intent"].(map[string]any)["short"].(string)
	card := fmt.Sprintf(`[data-invocation=%q]`, id)
	owner.run("pending card", previewShown(card))
	require.Contains(t, owner.text(card+` [data-intent-digest]`), short, "the card shows the intent digest's first characters")

	owner.run("edit", chromedp.Click(card+` button[aria-label^="Edit, then approve"]`, chromedp.ByQuery),
		chromedp.WaitVisible(card+` .edit-approve textarea`, chromedp.ByQuery))
	var value string
	owner.eval("the form's params", fmt.Sprintf(`document.querySelector(%q).value`, card+` .edit-approve textarea`), &value)
	require.Contains(t, value, "ship it", "the form starts from the params as they are")

	// Params the schema refuses are refused, and nothing changes.
	owner.run("invalid edit", fill(card+` .edit-approve textarea`, `{"channel": 5}`),
		chromedp.Click(card+` button[aria-label^="Approve edited"]`, chromedp.ByQuery),
		chromedp.WaitVisible(card+` .alert`, chromedp.ByQuery))
	require.Equal(t, "pending", b.Invocation(id)["status"])

	owner.run("edit and approve", fill(card+` .edit-approve textarea`, `{"channel": "C0123456789", "text": "ship it on Monday"}`),
		chromedp.Click(card+` button[aria-label^="Approve edited"]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(card, chromedp.ByQuery))
	inv := b.WaitStatus(id, invocation.StatusCompleted, 15*time.Second)
	require.Equal(t, true, inv["edited"])
	reqs := b.Slack.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "ship it on Monday", reqs[0].Body["text"], "the provider receives the edited params")

	owner.run("timeline", chromedp.Navigate(br.base+"/console/#/invocations/"+id),
		chromedp.WaitVisible(`.timeline .ev-completed`, chromedp.ByQuery))
	edits := owner.text(`.edits`)
	require.Contains(t, edits, "/text")
	require.Contains(t, edits, "ship it on Monday")
	steps := owner.text(`.timeline`)
	require.Contains(t, steps, "edited")
	require.True(t, strings.Contains(steps, "user-owner") || strings.Contains(steps, "owner"), steps)
}
