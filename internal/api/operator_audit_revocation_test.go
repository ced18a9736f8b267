package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// TestOperatorAudit_RevokingByJTIRefusesATokenIssuedAhead: a token whose
// issuer's clock runs ahead (its iat up to auth.leeway in the future,
// which the verifier lets in) is refused once revoked by its jti, as
// operations.md advises for exactly those tokens: a jti names one token,
// so its revocation refuses it however far ahead it was issued, and
// withdraws what it asked for that has not started.
func TestOperatorAudit_RevokingByJTIRefusesATokenIssuedAhead(t *testing.T) {
	t.Parallel()
	b := withdrawBundle(t)
	ahead := func(jti, session string) string {
		now := time.Now()
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
			"org": apptest.Org, "sub": "agent", "kind": "sandbox", "session_id": session, "jti": jti,
			// Within the default leeway (30s): accepted.
			"iat": now.Add(20 * time.Second).Unix(), "exp": now.Add(time.Hour).Unix(),
		}).SignedString([]byte(b.Secret))
		require.NoError(t, err)
		return tok
	}
	leaked := ahead("leaked-jti", "s-leaked")
	probe := sessionProbe("s-leaked")
	require.Equal(t, http.StatusOK, b.Do(http.MethodGet, probe, leaked, nil).Status, "a token issued within the leeway is let in")
	asked := askAs(t, b, "s-leaked", leaked, "from the leaked token")

	r := b.Do(http.MethodPost, "/v1/revocations", b.Owner(), map[string]any{"jti": "leaked-jti"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.EqualValues(t, 1, r.Body["withdrawn"], string(r.Raw))
	require.Equal(t, "cancelled", statusIn(t, b, apptest.Org, asked), "what the revoked token asked for is withdrawn")
	r = b.Do(http.MethodGet, probe, leaked, nil)
	require.Equal(t, http.StatusUnauthorized, r.Status, "the token revoked by its jti is refused: %s", r.Raw)
	require.Equal(t, "token_revoked", r.Body["error"].(map[string]any)["code"])
}
