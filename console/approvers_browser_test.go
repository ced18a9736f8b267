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

// TestApproversBrowser: a request that needs two approvers of the ops
// group lands, live and on a fresh list, under "Waiting for you" in the
// inbox of the group's members, and in an admin's outside the group only
// under "Other approvers' requests" (collapsed, saying the ops group
// decides it, no buttons), which the admin's count leaves out. Its card
// shows who approved so far ("Approved by carol, 1 of 2"), keeps waiting
// after the first approval in the console (an edit, then approve: the card
// shows the edited params and the approval), shows the same on its
// invocation page, where an admin outside the group gets no decision
// buttons, and leaves the inbox when the second, distinct approver
// approves it.
func TestApproversBrowser(t *testing.T) {
	b := apptest.Start(t, &apptest.Options{Approvals: approvers.Config{Required: map[policy.Tier]int{policy.TierR2: 2}}})
	br := newBrowser(t, b)
	b.StoreSlackToken("xoxb-console")
	userToken := func(subject string) string {
		return b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, RegisteredClaims: jwt.RegisteredClaims{Subject: subject}})
	}
	p := b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{"groups": []map[string]any{{"name": "ops", "members": []string{"carol", "dave"}}}})
	require.Equal(t, http.StatusOK, p.Status, string(p.Raw))

	// Carol (in ops) and Erin (an admin outside it) have the inbox open
	// when the request arrives.
	carol := br.tab()
	defer carol.close()
	carol.signIn(userToken("carol"))
	erin := br.tab()
	defer erin.close()
	erin.signIn(userToken("erin"))

	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "two keys"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	card := fmt.Sprintf(`[data-invocation=%q]`, id)
	approve := card + ` button[aria-label="Approve slack.send_message"]`
	mine := `ul[aria-label="Waiting for you"] ` + card
	others := `details.inbox-others ul[aria-label="Other approvers' requests"] ` + card

	// Erin's inbox, live: the request is another group's, apart and
	// collapsed, and not counted as hers.
	othersOnly := func(what string) {
		t.Helper()
		erin.run(what, chromedp.WaitReady(others, chromedp.ByQuery),
			chromedp.WaitVisible(`//span[contains(@class,"inbox-count") and contains(., "0 waiting for you")]`, chromedp.BySearch))
		require.Contains(t, erin.text(".inbox-count"), "1 for other approvers")
		require.Zero(t, erin.count(mine), "not under Waiting for you")
		require.Zero(t, erin.count(`details.inbox-others[open]`), "other approvers' requests are collapsed")
		require.Contains(t, erin.text(`#inbox-mine-h`), "Waiting for you (0)")
		require.Contains(t, erin.text(`details.inbox-others summary`), "Other approvers' requests (1)")
		erin.run("open the other approvers' requests", chromedp.Click(`details.inbox-others summary`, chromedp.ByQuery), chromedp.WaitVisible(others, chromedp.ByQuery))
		require.Contains(t, erin.text(others+" .decided-by"), "Decided by approver group ops")
		require.Zero(t, erin.count(others+" .decision button"), "no decision buttons outside the approver group")
	}
	othersOnly("erin's inbox, live")
	erin.shot("42-approvers-other-approvers-requests")

	// Carol's, live: it is hers to decide, and counted.
	carol.run("the card", chromedp.WaitVisible(mine, chromedp.ByQuery), previewShown(card))
	require.Contains(t, carol.text(".inbox-count"), "1 waiting for you")
	require.Zero(t, carol.count(`details.inbox-others`), "nothing of other approvers")
	require.Contains(t, carol.text(card+" .approvals"), "Needs 2 approvals")
	require.Contains(t, carol.text(card+" .approvals"), "approver group ops")
	// Carol edits, then approves: one approval of two, the card shows the
	// edited params and her approval.
	carol.run("carol edits and approves", chromedp.Click(card+` button[aria-label^="Edit, then approve"]`, chromedp.ByQuery),
		chromedp.WaitVisible(card+` .edit-approve textarea`, chromedp.ByQuery),
		fill(card+` .edit-approve textarea`, `{"channel": "C0123456789", "text": "two keys, edited"}`),
		chromedp.Click(card+` button[aria-label^="Approve edited"]`, chromedp.ByQuery),
		chromedp.WaitVisible(fmt.Sprintf(`//li[@data-invocation=%q]//p[contains(., "Approved by carol, 1 of 2")]`, id), chromedp.BySearch),
		chromedp.WaitNotPresent(card+` .edit-approve`, chromedp.ByQuery))
	require.Contains(t, carol.text(card), "two keys, edited", "the card shows the edited params")
	carol.shot("40-approvers-1-of-2")
	inv := b.Invocation(id)
	require.Equal(t, "pending", inv["status"], "one approval of two runs nothing")
	require.Equal(t, "two keys, edited", inv["params"].(map[string]any)["text"])

	// An admin outside the group reads the progress on the invocation
	// page, and is offered no decision the API would refuse.
	erin.run("erin's invocation page", chromedp.Navigate(br.base+"/console/#/invocations/"+id),
		chromedp.WaitVisible(`//p[contains(@class,"approvals") and contains(., "Approved by carol, 1 of 2")]`, chromedp.BySearch))
	require.Contains(t, erin.text(`main .approvals`), "for the group's members to decide")
	require.Zero(t, erin.count(`main .decision button`), "no decision buttons outside the approver group")
	erin.shot("41-approvers-outside-the-group")
	// Listed afresh, Erin's inbox puts it apart as well.
	erin.run("erin's inbox, listed", chromedp.Navigate(br.base+"/console/#/inbox"), chromedp.WaitVisible(`#inbox-h`, chromedp.ByQuery))
	othersOnly("erin's inbox, listed")
	erin.close()

	dave := br.tab()
	defer dave.close()
	dave.signIn(userToken("dave"))
	dave.run("dave's card", chromedp.WaitVisible(mine+" .approvals", chromedp.ByQuery), previewShown(card))
	require.Contains(t, dave.text(".inbox-count"), "1 waiting for you")
	require.Contains(t, dave.text(card+" .approvals"), "Approved by carol, 1 of 2")
	dave.run("dave approves", chromedp.Click(approve, chromedp.ByQuery), chromedp.WaitNotPresent(card, chromedp.ByQuery))
	inv = b.WaitStatus(id, "completed", 15*time.Second)
	require.Equal(t, "dave", inv["approved_by"])
	var sent bool
	for _, req := range b.Slack.Requests() {
		sent = sent || req.Body["text"] == "two keys, edited"
	}
	require.True(t, sent, "the provider receives the edited params")
	carol.run("gone from carol's inbox too", chromedp.WaitNotPresent(card, chromedp.ByQuery))
}
