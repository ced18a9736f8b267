package auth

import (
	"errors"

	"github.com/golang-jwt/jwt/v5"
)

// Identity maps the claims of a token the identity provider issued and the
// caller has verified itself, such as the ID token of a console sign-in
// (whose aud is the console's client id, not auth.idp.audience), to
// outboxd's claims with the identity provider's claim names and defaults
// (auth.idp.claims.*, auth.idp.defaults.*), held to the rules Verify holds
// a token's claims to. Signature, iss, aud and exp are not checked here.
func (v *Verifier) Identity(raw map[string]any) (*Claims, error) {
	if v == nil || v.keys == nil {
		return nil, errors.New("no identity provider is configured (auth.idp.issuer)")
	}
	c, err := mapClaims(jwt.MapClaims(raw), &v.cfg.IdP.Claims, &v.cfg.IdP.Defaults)
	if err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}
