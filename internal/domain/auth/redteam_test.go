package auth_test

import (
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth/idp"
	"github.com/outboxd/outboxd/internal/domain/auth/idp/idptest"
)

// TestVerifier_RemovedKeyEndsRememberedTokens: a token verified while its
// key was published is refused once the provider no longer publishes that
// key and outboxd has fetched the set again, although the verifier
// remembers it: a leaked or compromised key is withdrawn at the provider,
// and the tokens it signed (a forger's with an exp far off among them)
// must stop with it, not live on until their exp.
func TestVerifier_RemovedKeyEndsRememberedTokens(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	old := map[string]string{}
	for _, alg := range idptest.Algs {
		old[alg] = b.idp.Sign(t, alg, idpClaims(b.idp, b.clock, jwt.MapClaims{"sub": "before-" + alg}))
		_, err := b.v.Verify(old[alg])
		require.NoError(t, err, alg)
		_, err = b.v.Verify(old[alg])
		require.NoError(t, err, "remembered, %s", alg)
	}
	fetches := b.idp.KeyRequests()

	require.NoError(t, b.idp.Rotate())
	// A token of the new keys makes outboxd fetch the set, which no
	// longer holds the old keys.
	_, err := b.v.Verify(b.idp.Sign(t, "RS256", idpClaims(b.idp, b.clock, nil)))
	require.NoError(t, err)
	require.Equal(t, fetches+1, b.idp.KeyRequests())

	for alg, tok := range old {
		_, err := b.v.Verify(tok)
		require.ErrorIs(t, err, idp.ErrUnknownKey, "a remembered %s token of a removed key", alg)
	}
}
