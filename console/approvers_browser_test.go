package console_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/approvers"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/policy"
)

// TestApproversBrowser: a request that needs two approvers shows on its
// inbox card who approved so far ("Approved by carol, 1 of 2"), keeps
// waiting after the first approval in the console, and leaves the inbox
// when the second, distinct approver approves it.
func TestApproversBrowser(t *testing.T) {
	b := apptest.Start(t, &apptest.Options{Approvals: approvers.Config{Required: map[policy.Tier]int{policy.TierR2: 2}}})
	br := newBrowser(t, b)
	b.StoreSlackToken("xoxb-console")
	userToken := func(subject string) string {
		return b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, RegisteredClaims: jwt.RegisteredClaims{Subject: subject}})
	}

	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "two keys"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	card := fmt.Sprintf(`[data-invocation=%q]`, id)
	approve := card + ` button[aria-label="Approve slack.send_message"]`

	carol := br.tab()
	defer carol.close()
	carol.signIn(userToken("carol"))
	carol.run("the card", previewShown(card))
	require.Contains(t, carol.text(card+" .approvals"), "Needs 2 approvals")
	carol.run("carol approves", chromedp.Click(approve, chromedp.ByQuery),
		chromedp.WaitVisible(fmt.Sprintf(`//li[@data-invocation=%q]//p[contains(., "Approved by carol, 1 of 2")]`, id), chromedp.BySearch))
	carol.shot("40-approvers-1-of-2")
	require.Equal(t, "pending", b.Invocation(id)["status"], "one approval of two runs nothing")

	dave := br.tab()
	defer dave.close()
	dave.signIn(userToken("dave"))
	dave.run("dave's card", chromedp.WaitVisible(card+" .approvals", chromedp.ByQuery), previewShown(card))
	require.Contains(t, dave.text(card+" .approvals"), "Approved by carol, 1 of 2")
	dave.run("dave approves", chromedp.Click(approve, chromedp.ByQuery), chromedp.WaitNotPresent(card, chromedp.ByQuery))
	inv := b.WaitStatus(id, "completed", 15*time.Second)
	require.Equal(t, "dave", inv["approved_by"])
	carol.run("gone from carol's inbox too", chromedp.WaitNotPresent(card, chromedp.ByQuery))
}
