package console_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// previewPages drives the previews of pending invocations (issue 26): the
// inbox card and the invocation page show what the action will do above
// its raw params, and a preview that failed leaves the params and a note.
func previewPages(t *testing.T, br *browser, owner *tab) {
	b := br.b
	t.Run("PreviewAboveTheParams", func(t *testing.T) {
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "release notes are out"})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		id := r.Body["invocation_id"].(string)
		card := fmt.Sprintf(`[data-invocation=%q]`, id)
		owner.run("inbox", chromedp.Navigate(br.base+"/console/#/inbox"), chromedp.WaitVisible(`#inbox-h`, chromedp.ByQuery),
			// The card asks for its preview until the worker's job has
			// rendered it.
			chromedp.WaitVisible(card+` .preview-message`, chromedp.ByQuery))
		require.Contains(t, owner.text(card+` .preview-title`), "Message to C0123456789")
		require.Contains(t, owner.text(card+` .preview-text`), "release notes are out")
		var above bool
		owner.eval("preview above the params", fmt.Sprintf(`(() => { const c = document.querySelector(%q);
			const p = c.querySelector(".preview"), f = c.querySelector(".field");
			return !!(p && f && (p.compareDocumentPosition(f) & Node.DOCUMENT_POSITION_FOLLOWING)) })()`, card), &above)
		require.True(t, above, "the preview comes before the raw params")
		owner.shot("14-inbox-preview")

		pv := b.Invocation(id)["preview"].(map[string]any)
		require.Equal(t, "rendered", pv["status"])
		owner.run("invocation page", chromedp.Navigate(br.base+"/console/#/invocations/"+id),
			chromedp.WaitVisible(`#inv-h`, chromedp.ByQuery), chromedp.WaitVisible(`.preview-message`, chromedp.ByQuery))
		require.Contains(t, owner.text(`.preview-title`), "Message to C0123456789")
		owner.run("deny it", chromedp.Click(`button[aria-label^="Deny"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`textarea`, chromedp.ByQuery), fill(`textarea`, "previewed only"),
			chromedp.Click(`button.danger`, chromedp.ByQuery))
		require.Eventually(t, func() bool { return b.Invocation(id)["status"] == "denied" }, 10*time.Second, 50*time.Millisecond)
	})

	t.Run("PreviewThatFailedLeavesTheParamsAndANote", func(t *testing.T) {
		// No GitHub credential is stored: the rendering fails, and says so.
		r := b.Do("POST", "/v1/sessions/session-1/actions/invoke", b.Sandbox(), map[string]any{
			"integration": "github", "action": "create_issue",
			"params": map[string]any{"owner": "octo", "repo": "web", "title": "Flaky deploy"},
		})
		if r.Status != http.StatusAccepted {
			t.Fatalf("invoke github.create_issue: %d %s", r.Status, r.Raw)
		}
		id := r.Body["invocation_id"].(string)
		require.Eventually(t, func() bool { return b.Invocation(id)["preview"] != nil }, 15*time.Second, 50*time.Millisecond)
		owner.run("invocation page", chromedp.Navigate(br.base+"/console/#/invocations/"+id),
			chromedp.WaitVisible(`.preview-failed`, chromedp.ByQuery))
		require.Contains(t, owner.text(`.preview-failed`), "no credential is stored for github")
		require.Contains(t, owner.text(`main`), "Flaky deploy", "the raw params are still shown")
		owner.shot("15-preview-failed")
		r = b.Do("POST", "/v1/invocations/"+id+"/deny", b.Owner(), map[string]any{"reason": "previewed only"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	})
}
