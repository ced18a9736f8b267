package api_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// adminNamed is an admin token of the default organization for subject.
func adminNamed(b *apptest.Bundle, subject string) string {
	return b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, RegisteredClaims: jwt.RegisteredClaims{Subject: subject}})
}

// TestBindAudit_RacingDecisionsHaveOneOutcome: an approval with an edit,
// a plain approval and a denial of one invocation, sent at once, have one
// outcome: one of them is answered 200, the others 409 and change nothing,
// and what runs (if anything) is exactly what the winner approved, once.
func TestBindAudit_RacingDecisionsHaveOneOutcome(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-race")
	const rounds = 4
	type round struct {
		id       string
		statuses [3]int
	}
	var all []round
	for i := range rounds {
		id := pendingInvoke(t, b, "C0123456789", fmt.Sprintf("round %d", i))
		var rd round
		rd.id = id
		var wg sync.WaitGroup
		wg.Go(func() {
			rd.statuses[0] = b.Do("POST", "/v1/invocations/"+id+"/approve", adminNamed(b, "editor"),
				map[string]any{"params": map[string]any{"channel": "C0123456789", "text": fmt.Sprintf("round %d edited", i)}}).Status
		})
		wg.Go(func() {
			rd.statuses[1] = b.Do("POST", "/v1/invocations/"+id+"/approve", adminNamed(b, "approver"), map[string]any{"mode": "once"}).Status
		})
		wg.Go(func() {
			rd.statuses[2] = b.Do("POST", "/v1/invocations/"+id+"/deny", adminNamed(b, "denier"), map[string]any{"reason": "no"}).Status
		})
		wg.Wait()
		all = append(all, rd)
	}
	for i, rd := range all {
		t.Logf("round %d: edit+approve, approve, deny answered %v", i, rd.statuses)
		winners := 0
		for _, s := range rd.statuses {
			if s == http.StatusOK {
				winners++
			} else {
				require.Equal(t, http.StatusConflict, s, "round %d: %v", i, rd.statuses)
			}
		}
		require.Equal(t, 1, winners, "round %d: one decision wins: %v", i, rd.statuses)
	}
	waitJobsSettled(t, b)
	posts := map[string]int{}
	for _, p := range b.Slack.Posts() {
		posts[fmt.Sprint(p.Body["text"])]++
	}
	for i, rd := range all {
		original, edited := fmt.Sprintf("round %d", i), fmt.Sprintf("round %d edited", i)
		switch {
		case rd.statuses[0] == http.StatusOK:
			inv := b.WaitStatus(rd.id, "completed", 15*time.Second)
			require.Equal(t, true, inv["edited"])
			require.Equal(t, 1, posts[edited], "round %d: the edit runs once", i)
			require.Zero(t, posts[original], "round %d: the agent's params never run", i)
		case rd.statuses[1] == http.StatusOK:
			inv := b.WaitStatus(rd.id, "completed", 15*time.Second)
			require.Equal(t, false, inv["edited"], "round %d: an edit that lost changed nothing", i)
			require.Equal(t, 1, posts[original], "round %d: what was approved runs once", i)
			require.Zero(t, posts[edited], "round %d", i)
		default:
			inv := b.Invocation(rd.id)
			require.Equal(t, "denied", inv["status"])
			require.Equal(t, false, inv["edited"], "round %d: an edit that lost changed nothing", i)
			require.Zero(t, posts[original]+posts[edited], "round %d: nothing runs", i)
		}
		require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM invocation_events WHERE invocation_id = $1
			AND type IN ('approved', 'denied')`, rd.id), "round %d: one decision in the timeline", i)
		edits := 0
		if rd.statuses[0] == http.StatusOK {
			edits = 1
		}
		require.Equal(t, edits, countRows(t, b, `SELECT count(*) FROM invocation_events WHERE invocation_id = $1
			AND type = 'edited'`, rd.id), "round %d: only a winning edit is in the timeline", i)
	}
}

// TestBindAudit_RacingApproversNeverReleaseAnUnseenEdit: with two
// approvals required, an edit and approvals naming the digest they
// reviewed, sent at once, never release params fewer than two people
// approved: whatever runs, its intent digest was approved by two distinct
// people, and the provider receives the params of that intent.
func TestBindAudit_RacingApproversNeverReleaseAnUnseenEdit(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-race-two")
	const rounds = 4
	ids := make([]string, rounds)
	for i := range rounds {
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": fmt.Sprintf("two %d", i)})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		inv := r.Body["invocation"].(map[string]any)
		if i == 0 {
			put := b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{"required": map[string]any{inv["risk_tier"].(string): 2}})
			require.Equal(t, http.StatusOK, put.Status, string(put.Raw))
		}
		ids[i] = inv["id"].(string)
		seen := inv["intent"].(map[string]any)["short"].(string)
		var wg sync.WaitGroup
		wg.Go(func() {
			b.Do("POST", "/v1/invocations/"+ids[i]+"/approve", adminNamed(b, "editor"),
				map[string]any{"digest": seen, "params": map[string]any{"channel": "C0123456789", "text": fmt.Sprintf("two %d edited", i)}})
		})
		for _, who := range []string{"carol", "dave"} {
			wg.Go(func() {
				b.Do("POST", "/v1/invocations/"+ids[i]+"/approve", adminNamed(b, who), map[string]any{"digest": seen})
			})
		}
		wg.Wait()
	}
	waitJobsSettled(t, b)
	posts := map[string]int{}
	for _, p := range b.Slack.Posts() {
		posts[fmt.Sprint(p.Body["text"])]++
	}
	for i, id := range ids {
		inv := b.Invocation(id)
		original, edited := fmt.Sprintf("two %d", i), fmt.Sprintf("two %d edited", i)
		if inv["status"] == "pending" {
			require.Zero(t, posts[original]+posts[edited], "round %d: nothing ran", i)
			continue
		}
		inv = b.WaitStatus(id, "completed", 15*time.Second)
		approved := inv["intent"].(map[string]any)["approved_digest"].(string)
		require.GreaterOrEqual(t, countRows(t, b, `SELECT count(DISTINCT approver) FROM invocation_approvals
			WHERE invocation_id = $1 AND intent_digest = $2`, id, approved), 2, "round %d: two people approved what runs", i)
		text := original
		if inv["edited"] == true {
			text = edited
		}
		require.Equal(t, 1, posts[text], "round %d: the approved params run once", i)
		require.Equal(t, 1, posts[original]+posts[edited], "round %d: nothing else runs", i)
	}
}
