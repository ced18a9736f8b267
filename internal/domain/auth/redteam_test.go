package auth_test

import (
	"encoding/json"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
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

// TestVerifier_EmailSubjectNeedsVerifiedEmail: with the subject read from
// the email claim (auth.idp.claims.subject: email), an address the
// provider has not verified names nobody: at a provider where people
// register themselves, or change their address, anyone could otherwise
// claim another person's address and be them in outboxd (their approvals,
// their credentials). Such a token, or console sign-in, is refused unless
// email_verified is true.
func TestVerifier_EmailSubjectNeedsVerifiedEmail(t *testing.T) {
	t.Parallel()
	b := setup(t, &auth.Config{IdP: auth.IdPConfig{Claims: auth.ClaimNames{Subject: "email"}}})
	token := func(extra jwt.MapClaims) string {
		extra["email"] = "alice@example.com"
		return b.idp.Sign(t, "ES256", idpClaims(b.idp, b.clock, extra))
	}
	for name, verified := range map[string]any{"Missing": nil, "False": false, "StringFalse": "false", "Number": 1} {
		_, err := b.v.Verify(token(jwt.MapClaims{"email_verified": verified}))
		require.ErrorContains(t, err, "email_verified", name)
		_, err = b.v.Identity(asJSON(t, idpClaims(b.idp, b.clock, jwt.MapClaims{"email": "alice@example.com", "email_verified": verified})))
		require.ErrorContains(t, err, "email_verified", "console sign-in, %s", name)
	}
	for _, verified := range []any{true, "true"} {
		c, err := b.v.Verify(token(jwt.MapClaims{"email_verified": verified}))
		require.NoError(t, err)
		require.Equal(t, "alice@example.com", c.Subject)
		c, err = b.v.Identity(asJSON(t, idpClaims(b.idp, b.clock, jwt.MapClaims{"email": "alice@example.com", "email_verified": verified})))
		require.NoError(t, err)
		require.Equal(t, "alice@example.com", c.Subject)
	}

	// The default subject, sub, needs no email_verified.
	d := setup(t, nil)
	_, err := d.v.Verify(d.idp.Sign(t, "ES256", idpClaims(d.idp, d.clock, jwt.MapClaims{"email": "x@example.com", "email_verified": false})))
	require.NoError(t, err)
}

// asJSON is claims as an ID token's decoded JSON has them.
func asJSON(t *testing.T, claims jwt.MapClaims) map[string]any {
	t.Helper()
	b, err := json.Marshal(claims)
	require.NoError(t, err)
	out := map[string]any{}
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}
