package approvers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/approvers"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
)

const secret = "approvers-signing-secret-0123456"

func user(b *apptest.Bundle, subject string, role auth.Role) string {
	return b.Token(auth.Claims{Kind: auth.KindUser, Role: role, RegisteredClaims: jwt.RegisteredClaims{Subject: subject}})
}

func requireError(t *testing.T, r *apptest.Response, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.Status, string(r.Raw))
	require.Equal(t, code, r.Body["error"].(map[string]any)["code"], string(r.Raw))
}

// sent counts the calls the action made to Slack with text.
func sent(b *apptest.Bundle, text string) int {
	n := 0
	for _, p := range b.Slack.Posts() {
		if p.Body["text"] == text && p.Body["blocks"] == nil {
			n++
		}
	}
	return n
}

// Nobody approves their own request; an R4 invocation waits for a second,
// distinct approver and runs once after it.
func TestApprovers_R4WaitsForASecondApproverAndRunsOnce(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Approvals: approvers.Config{Required: approvers.DefaultRequired()}})
	b.StoreSlackToken("xoxb-approvers")
	alice, bob := user(b, "alice", auth.RoleAdmin), user(b, "bob", auth.RoleOwner)

	// alice's automation asks; alice may not approve its run.
	service := b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-1", UserID: "alice"})
	r := b.Do("POST", "/v1/envelopes", service, map[string]any{
		"external_id": "r4-run", "tool": map[string]any{"source": "slack", "action": "send_message"},
		"args": map[string]any{"channel": "C0123456789", "text": "wire the money"},
	})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := r.Body["action_id"].(string)
	// No built-in action is R4: make this one so, as an R4 action's
	// invocation is stored.
	_, err := b.Pool.Exec(context.Background(), `UPDATE action_invocations SET risk_level = 'R4' WHERE id = $1`, id)
	require.NoError(t, err)

	requireError(t, b.Do("POST", "/v1/invocations/"+id+"/approve", alice, map[string]string{"mode": "once"}), http.StatusForbidden, "self_approval")

	carol := user(b, "carol", auth.RoleAdmin)
	// Always allow comes only with the releasing approval: refused,
	// nothing recorded.
	requireError(t, b.Do("POST", "/v1/invocations/"+id+"/approve", carol, map[string]string{"mode": "always"}), http.StatusBadRequest, "invalid_request")
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", carol, map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "pending", inv["status"], "one of two approvals leaves it pending")
	require.EqualValues(t, 2, inv["approvals_required"])
	approvals := inv["approvals"].([]any)
	require.Len(t, approvals, 1)
	require.Equal(t, "carol", approvals[0].(map[string]any)["by"])

	// The same person again is refused and counts nothing.
	requireError(t, b.Do("POST", "/v1/invocations/"+id+"/approve", carol, map[string]string{"mode": "once"}), http.StatusConflict, "already_approved")
	// Nobody grants ahead what needs two people each time: refused,
	// nothing recorded.
	grantAhead := map[string]any{"mode": "once", "grant": map[string]any{"count": 3, "minutes": 10}}
	requireError(t, b.Do("POST", "/v1/invocations/"+id+"/approve", bob, grantAhead), http.StatusBadRequest, "invalid_request")

	// The inbox shows who approved so far, and to whom it is open.
	list := b.Do("GET", "/v1/invocations?status=pending", bob, nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	item := list.Body["invocations"].([]any)[0].(map[string]any)
	require.Equal(t, id, item["id"])
	require.Len(t, item["approvals"], 1)
	require.EqualValues(t, 2, item["approvals_required"])
	require.Equal(t, true, item["can_approve"])
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, 0, sent(b, "wire the money"), "nothing ran on one approval")
	require.Equal(t, "pending", b.Invocation(id)["status"])

	// The second, distinct approval releases it: it runs, once.
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", bob, map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.NotEqual(t, "pending", r.Body["invocation"].(map[string]any)["status"])
	done := b.WaitStatus(id, "completed", 15*time.Second)
	require.Equal(t, "bob", done["approved_by"])
	requireError(t, b.Do("POST", "/v1/invocations/"+id+"/approve", carol, map[string]string{"mode": "once"}), http.StatusConflict, "conflict")
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, 1, sent(b, "wire the money"), "exactly one run")

	// An R2 invocation still needs one approval.
	r = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "one is enough"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id2 := r.Body["invocation_id"].(string)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+id2+"/approve", carol, map[string]string{"mode": "once"}).Status)
	b.WaitStatus(id2, "completed", 15*time.Second)
}

// An approval approves an intent: an approver's edit makes the approvals
// given before count no more, so each approver approves what will run.
func TestApprovers_AnEditAsksEveryoneAgain(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Approvals: approvers.Config{Required: approvers.DefaultRequired()}})
	b.StoreSlackToken("xoxb-approvers")
	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "before the edit"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	_, err := b.Pool.Exec(context.Background(), `UPDATE action_invocations SET risk_level = 'R4' WHERE id = $1`, id)
	require.NoError(t, err)
	carol, bob := user(b, "carol", auth.RoleAdmin), user(b, "bob", auth.RoleOwner)

	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+id+"/approve", carol, map[string]string{"mode": "once"}).Status)
	edited := map[string]any{"mode": "once", "params": map[string]any{"channel": "C0123456789", "text": "after the edit"}}
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", bob, edited)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "pending", inv["status"], "carol approved the text before the edit")
	approvals := inv["approvals"].([]any)
	require.Len(t, approvals, 1)
	require.Equal(t, "bob", approvals[0].(map[string]any)["by"])

	// carol approves the edited request: it runs once, as edited.
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", carol, map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.WaitStatus(id, "completed", 15*time.Second)
	require.Equal(t, 1, sent(b, "after the edit"))
	require.Zero(t, sent(b, "before the edit"))

	// The audit trail names each approval and the intent it approved: the
	// last two, after the edit, the invocation's own.
	r = b.Do("GET", "/v1/audit?action=invocation.approve", bob, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	entries := r.Body["entries"].([]any)
	require.Len(t, entries, 3)
	short := b.Invocation(id)["intent"].(map[string]any)["short"]
	var who, intents []any
	for _, e := range entries {
		entry := e.(map[string]any)
		require.Equal(t, id, entry["target_id"])
		who = append(who, entry["actor"].(map[string]any)["subject"])
		intents = append(intents, entry["after"].(map[string]any)["intent"])
	}
	require.ElementsMatch(t, []any{"carol", "bob", "carol"}, who)
	require.Equal(t, 2, count(intents, short), "bob's and carol's second approval approved the edited intent")
}

func count(values []any, v any) int {
	n := 0
	for _, x := range values {
		if x == v {
			n++
		}
	}
	return n
}

type clicker struct {
	b     *apptest.Bundle
	id    string
	value string
}

// click clicks the invocation's approval message, where outboxd recorded
// it (a click on another message decides nothing).
func (c *clicker) click(slackUser, action string) {
	var channel, msgTS string
	require.Eventually(c.b.T, func() bool {
		err := c.b.Pool.QueryRow(context.Background(), "SELECT channel, ts FROM slack_messages WHERE invocation_id = $1", c.id).Scan(&channel, &msgTS)
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "user": map[string]string{"id": slackUser},
		"container":    map[string]any{"type": "message", "channel_id": channel, "message_ts": msgTS},
		"actions":      []any{map[string]string{"action_id": action, "value": c.value}},
		"response_url": c.b.Slack.Server.URL + "/response",
	})
	body := "payload=" + url.QueryEscape(string(payload))
	ts := time.Now().Unix()
	r := c.b.Do("POST", "/v1/slack/interactions", "", body, "Content-Type", "application/x-www-form-urlencoded",
		"X-Slack-Request-Timestamp", strconv.FormatInt(ts, 10), "X-Slack-Signature", slackapproval.Sign(secret, ts, []byte(body)))
	require.Equal(c.b.T, http.StatusOK, r.Status, string(r.Raw))
}

func calls(b *apptest.Bundle, path string) []apptest.SlackRequest {
	var out []apptest.SlackRequest
	for _, r := range b.Slack.Requests() {
		if r.Path == path && (path != "/chat.postMessage" || r.Body["blocks"] != nil) {
			out = append(out, r)
		}
	}
	return out
}

// updateSaying returns the latest chat.update whose text says text, and
// whether it is the last update made.
func updateSaying(b *apptest.Bundle, text string) (apptest.SlackRequest, bool) {
	updates := calls(b, "/chat.update")
	for i := len(updates) - 1; i >= 0; i-- {
		if strings.Contains(updates[i].Body["text"].(string), text) {
			return updates[i], i == len(updates)-1
		}
	}
	return apptest.SlackRequest{}, false
}

// Approver groups route a request to their Slack channel and to their
// members' inboxes; only members decide, and each Slack click is one
// approval by its mapped user, the message saying "1 of 2" meanwhile.
func TestApprovers_GroupsRouteToTheirChannelAndInbox(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Slack: slackapproval.Config{SigningSecret: secret}})
	b.StoreSlackToken("xoxb-approvers")
	owner := b.Owner()
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/notifications/slack", owner, map[string]any{"channel": "C_ORG"}).Status)
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/approvers/slack", owner, map[string]any{
		"U_CAROL": map[string]string{"user_id": "carol", "role": "admin"},
		"U_DAVE":  map[string]string{"user_id": "dave", "role": "admin"},
		"U_ALICE": map[string]string{"user_id": "alice", "role": "admin"},
	}).Status)

	// The policy: bad input is refused and changes nothing; a stale
	// If-Match is refused; each replacement is in the audit trail.
	got := b.Do("GET", "/v1/approvers/policy", b.Admin(), nil)
	require.Equal(t, http.StatusOK, got.Status, string(got.Raw))
	etag := got.Header.Get("ETag")
	require.NotEmpty(t, etag)
	for _, bad := range []map[string]any{
		{"required": map[string]any{"R9": 2}},
		{"required": map[string]any{"R2": 0}},
		{"groups": []any{map[string]any{"name": "g", "roles": []string{"member"}}}},
		{"groups": []any{map[string]any{"name": "g"}}},
		{"groups": []any{map[string]any{"name": "g", "roles": []string{"admin"}}, map[string]any{"name": "g", "roles": []string{"owner"}}}},
	} {
		requireError(t, b.Do("PUT", "/v1/approvers/policy", owner, bad), http.StatusBadRequest, "invalid_request")
	}
	requireError(t, b.Do("PUT", "/v1/approvers/policy", b.Admin(), map[string]any{}), http.StatusForbidden, "forbidden")
	policy := map[string]any{
		"required": map[string]any{"r2": 2},
		"groups": []any{
			map[string]any{"name": "github-team", "roles": []string{"owner"}, "sources": []string{"github"}},
			map[string]any{"name": "payments", "members": []string{"carol", "dave"}, "sources": []string{"slack"}, "tiers": []string{"R2", "R3"}, "slack_channel": "C_PAY"},
		},
	}
	r := b.Do("PUT", "/v1/approvers/policy", owner, policy, "If-Match", etag)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.EqualValues(t, 2, r.Body["required"].(map[string]any)["R2"])
	requireError(t, b.Do("PUT", "/v1/approvers/policy", owner, policy, "If-Match", etag), http.StatusPreconditionFailed, "precondition_failed")
	trail := b.Do("GET", "/v1/audit?action=approval_policy", owner, nil)
	require.Equal(t, http.StatusOK, trail.Status, string(trail.Raw))
	require.Contains(t, string(trail.Raw), "approval_policy.replace")
	require.Contains(t, string(trail.Raw), "C_PAY")

	r = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "pay the invoice"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)

	// Slack: the group's channel, not the organization's.
	require.Eventually(t, func() bool { return len(calls(b, "/chat.postMessage")) == 1 }, 10*time.Second, 20*time.Millisecond)
	post := calls(b, "/chat.postMessage")[0]
	require.Equal(t, "C_PAY", post.Body["channel"])
	require.Contains(t, post.Body["text"], "Needs 2 approval(s) (approver group payments)")
	var value string
	for _, blk := range post.Body["blocks"].([]any) {
		if els, ok := blk.(map[string]any)["elements"].([]any); ok && blk.(map[string]any)["type"] == "actions" {
			value = els[0].(map[string]any)["value"].(string)
		}
	}
	require.NotEmpty(t, value)
	c := &clicker{b: b, id: id, value: value}

	// The inbox: open to the group's members, not to other admins.
	canApprove := func(token string) any {
		list := b.Do("GET", "/v1/invocations?status=pending", token, nil)
		require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
		item := list.Body["invocations"].([]any)[0].(map[string]any)
		require.Equal(t, "payments", item["approver_group"])
		return item["can_approve"]
	}
	require.Equal(t, true, canApprove(user(b, "carol", auth.RoleAdmin)))
	require.Equal(t, false, canApprove(user(b, "alice", auth.RoleAdmin)))
	require.Equal(t, false, canApprove(owner), "an owner outside the group")

	// Outsiders neither approve nor deny, in the API or in Slack.
	alice := user(b, "alice", auth.RoleAdmin)
	requireError(t, b.Do("POST", "/v1/invocations/"+id+"/approve", alice, map[string]string{"mode": "once"}), http.StatusForbidden, "not_an_approver")
	requireError(t, b.Do("POST", "/v1/invocations/"+id+"/deny", alice, map[string]string{"reason": "no"}), http.StatusForbidden, "not_an_approver")
	c.click("U_ALICE", "approve")
	require.Eventually(t, func() bool { return len(calls(b, "/response")) == 1 }, 5*time.Second, 20*time.Millisecond)
	require.Contains(t, calls(b, "/response")[0].Body["text"], "not in this request's approver group")

	// carol's click is one approval: still pending, the message says so
	// and keeps its buttons.
	// (The message may also be updated once for its preview, when that is
	// rendered after the post.) The update is a River job: on a loaded
	// machine one failed attempt waits River's backoff (16 s for a second
	// retry), so the wait is a guard, not a measure.
	c.click("U_CAROL", "approve")
	var update apptest.SlackRequest
	require.Eventually(t, func() bool {
		update, _ = updateSaying(b, "Approved by carol, 1 of 2")
		return update.Body != nil
	}, time.Minute, 20*time.Millisecond)
	raw, _ := json.Marshal(update.Body["blocks"])
	require.Contains(t, string(raw), `"actions"`)
	require.Equal(t, "pending", b.Invocation(id)["status"])
	require.Len(t, calls(b, "/response"), 1, "nothing to tell carol alone")

	// dave's click is the second: it runs, and the message says who.
	c.click("U_DAVE", "approve")
	done := b.WaitStatus(id, "completed", 15*time.Second)
	require.Equal(t, "dave", done["approved_by"])
	require.Eventually(t, func() bool {
		_, last := updateSaying(b, "Approved by dave")
		return last
	}, 10*time.Second, 20*time.Millisecond)

	// A request no group takes goes as before: the organization's channel,
	// any admin decides; and one member of a group denies alone.
	policy["groups"] = []any{policy["groups"].([]any)[1]}
	policy["groups"].([]any)[0].(map[string]any)["tiers"] = []string{"R3"}
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/approvers/policy", owner, policy).Status)
	r = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "ungrouped"})
	id2 := r.Body["invocation_id"].(string)
	require.Eventually(t, func() bool { return len(calls(b, "/chat.postMessage")) == 2 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "C_ORG", calls(b, "/chat.postMessage")[1].Body["channel"])
	r = b.Do("POST", "/v1/invocations/"+id2+"/deny", alice, map[string]string{"reason": "not today"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "denied", r.Body["invocation"].(map[string]any)["status"])
}

// TestApprovers_PolicyWithoutGroups: a policy put without "groups" (or
// without "required") answers and reads back [] ({}), as the document's
// shape says, never null; the contract check of every exchange holds.
func TestApprovers_PolicyWithoutGroups(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	r := b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{"required": map[string]any{"R2": 2}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, []any{}, r.Body["groups"])
	r = b.Do("GET", "/v1/approvers/policy", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, []any{}, r.Body["groups"])
	require.EqualValues(t, 2, r.Body["required"].(map[string]any)["R2"])

	r = b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{"groups": []any{}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{}, r.Body["required"])
}

// TestApprovers_PolicyNamingATierTwice: a tier named twice in "required"
// (R3 and r3) is refused, not stored with whichever count map order
// happened to keep.
func TestApprovers_PolicyNamingATierTwice(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	r := b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{"required": map[string]any{"R3": 1, "r3": 3}})
	requireError(t, r, http.StatusBadRequest, "invalid_request")
	r = b.Do("GET", "/v1/approvers/policy", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{}, r.Body["required"])
}

// TestApprovers_PolicyPutNullChangesNothing: a JSON null body is refused,
// not taken for an empty policy that would drop every group and count.
func TestApprovers_PolicyPutNullChangesNothing(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	r := b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{"required": map[string]any{"R2": 2}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("PUT", "/v1/approvers/policy", b.Owner(), "null")
	requireError(t, r, http.StatusBadRequest, "invalid_json")
	r = b.Do("GET", "/v1/approvers/policy", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.EqualValues(t, 2, r.Body["required"].(map[string]any)["R2"])
}
