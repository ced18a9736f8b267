package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestBindAudit_ServiceTokenOwnerCannotApproveTheirOwnRun: a service
// token without an automation_id claim that acts for a person (user_id)
// is still an automation's token: that person cannot approve its
// envelope — not once, not always, not with an edit or a grant — and a
// refused approval changes nothing. Someone else can.
func TestBindAudit_ServiceTokenOwnerCannotApproveTheirOwnRun(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")
	alice := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleOwner, RegisteredClaims: jwt.RegisteredClaims{Subject: "alice"}})
	service := b.Token(auth.Claims{Kind: auth.KindService, UserID: "alice", RegisteredClaims: jwt.RegisteredClaims{Subject: "cron-runner"}})

	r := b.Do("POST", "/v1/envelopes", service, envelope("alice-unbound-run", nil))
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := r.Body["action_id"].(string)
	require.Equal(t, "pending", r.Body["invocation_status"])

	for _, body := range []map[string]any{
		{"mode": "once"},
		{"mode": "always"},
		{"mode": "once", "params": map[string]any{"channel": "C0123456789", "text": "edited by alice"}},
		{"mode": "once", "grant": map[string]any{"count": 5, "minutes": 10}},
	} {
		refused := b.Do("POST", "/v1/invocations/"+id+"/approve", alice, body)
		requireAPIError(t, refused, http.StatusForbidden, "self_approval")
	}
	inv := b.Invocation(id)
	require.Equal(t, "pending", inv["status"], "a refused approval changes nothing")
	require.Equal(t, false, inv["edited"], "nor edits: %v", inv)
	require.Equal(t, 0, countRows(t, b, `SELECT count(*) FROM grants`), "nor grants")
	require.Equal(t, 0, countRows(t, b, `SELECT count(*) FROM action_modes`), "nor allows always")

	approved := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, approved.Status, string(approved.Raw))
	require.Equal(t, "completed", b.WaitStatus(id, "completed", 15*time.Second)["status"])
}
