package api_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/auth/signin/signintest"
)

// TestOperatorAudit_SignOutRevocationIsAudited: signing out of the console
// stores a revocation of the session (listed in GET /v1/revocations); like
// every other revocation, an owner's or the operator's, it leaves a
// tokens.revoke entry in the audit trail, by the person who signed out.
func TestOperatorAudit_SignOutRevocationIsAudited(t *testing.T) {
	t.Parallel()
	sb := startSignIn(t)
	br := newBrowser(t)
	resp, page := sb.signIn(t, br, signintest.Admin)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	status, me := br.call(t, "GET", sb.URL+"/auth/session")
	require.Equal(t, http.StatusOK, status, me)
	status, body := br.call(t, "POST", sb.URL+"/auth/logout", signin.CSRFHeader, me["csrf_token"].(string))
	require.Equal(t, http.StatusOK, status, body)

	revs := sb.Do("GET", "/v1/revocations", sb.Owner(), nil)
	require.Len(t, revs.Body["revocations"], 1, string(revs.Raw))
	rev := revs.Body["revocations"].([]any)[0].(map[string]any)
	entries := sb.AuditEntries("action=tokens.revoke")
	require.Len(t, entries, 1, "the sign-out's revocation is in the audit trail")
	e := entries[0]
	require.Equal(t, strconv.FormatInt(int64(rev["id"].(float64)), 10), e["target_id"])
	require.Equal(t, signintest.Admin, e["actor"].(map[string]any)["subject"])
	require.Equal(t, rev["jti"], e["after"].(map[string]any)["jti"])
}
