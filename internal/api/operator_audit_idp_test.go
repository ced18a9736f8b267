package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/idp/idptest"
)

// TestOperatorAudit_WithdrawnKeyEndsStreamOfTokenWithoutKID: an identity
// provider's token without a kid (verified by trying each signing key of
// its alg) is refused once the provider withdrew its key, and its open
// event stream ends then too, as the stream of a token naming its kid
// does: a stream lasts no longer than a new request with its token would
// be let in.
func TestOperatorAudit_WithdrawnKeyEndsStreamOfTokenWithoutKID(t *testing.T) {
	t.Parallel()
	provider := idptest.New(t)
	b := apptest.Start(t, &apptest.Options{Auth: auth.Config{IdP: auth.IdPConfig{
		Issuer: provider.Issuer, Audience: []string{"outboxd"},
		Defaults: auth.ClaimDefaults{Kind: auth.KindUser},
	}}})
	claims := func() jwt.MapClaims {
		return jwt.MapClaims{
			"iss": provider.Issuer, "aud": "outboxd", "sub": "alice", "org": apptest.Org, "role": "member",
			"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
		}
	}
	noKID := idptest.SignWith(t, "ES256", "", provider.Signer("ES256"), claims())
	require.Equal(t, http.StatusOK, b.Do(http.MethodGet, "/v1/invocations", noKID, nil).Status)
	withKID := provider.Sign(t, "ES256", claims())
	stream := b.Stream("/v1/events", noKID)
	kidStream := b.Stream("/v1/events", withKID)

	// The provider rotates its keys; a token of the new key (an unknown
	// kid) makes outboxd fetch them at once.
	require.NoError(t, provider.Rotate())
	require.Equal(t, http.StatusOK, b.Do(http.MethodGet, "/v1/invocations", provider.Sign(t, "ES256", claims()), nil).Status)

	r := b.Do(http.MethodGet, "/v1/invocations", noKID, nil)
	require.Equal(t, http.StatusUnauthorized, r.Status, "a request with the token is refused: %s", r.Raw)
	require.True(t, kidStream.Ended(revocationWait), "the stream of the token naming the withdrawn key's kid ends")
	require.True(t, stream.Ended(revocationWait), "the stream of the token without a kid ends as well")
}
