// Package signin signs people in to the web console with OpenID Connect:
// the authorization-code flow with PKCE (S256), against the identity
// provider outboxd already accepts tokens from (auth.idp.issuer), with
// outboxd registered there as a client (console.oidc.*).
//
// The flow:
//
//   - Start (GET /auth/login) makes a state, a nonce and a PKCE verifier,
//     keeps them in a short-lived cookie sealed with secrets.key (HttpOnly,
//     SameSite=Lax, ten minutes) and sends the browser to the provider's
//     authorization endpoint with the state, the nonce and the verifier's
//     S256 challenge. The client secret never appears in a URL.
//   - Finish (GET /auth/callback) checks the state against the cookie's,
//     refuses the provider's error answer, exchanges the code with the
//     verifier (the client secret, when there is one, goes in that request
//     only), and verifies the ID token: signature by the provider's keys,
//     iss, aud (the client id), exp, and the nonce.
//   - The session is the ID token's claims mapped to outboxd's with the
//     identity provider's claim mapping (auth.idp.claims.*,
//     auth.idp.defaults.*; auth.Verifier.Identity), which must give a user
//     with a role. It is stateless: a cookie (HttpOnly, SameSite=Lax; when
//     the redirect URL is https, Secure and named __Host-outboxd_session, so
//     that no other host, a sibling subdomain, can set or overwrite it, and
//     only that name is read) holding the mapped claims, a
//     CSRF token and the expiry, sealed with secrets.key (AES-256-GCM, so a
//     forged or altered cookie is refused, and a key rotation keeps
//     sessions working). It expires with the ID token, or sooner with
//     auth.max_lifetime; the browser drops the cookie then too.
//
// Why the ID token and not the access token: the ID token is the one token
// the OpenID Connect specification makes a JWT meant for the client, bound
// to this sign-in by the nonce, with the client id as its audience. Access
// tokens are opaque at many providers, or carry another audience, and
// would have to be configured to be what auth.idp.audience accepts. The
// cost: the provider must put the claims outboxd maps (organization, role)
// into the ID token, which providers offer as a claim mapper per client.
// The access token and the refresh token are not kept.
//
// Every request a session cookie authenticates that is not GET or HEAD
// must carry the session's CSRF token in the X-CSRF-Token header. The
// token is in the sealed cookie, so it is bound to the session, and the
// console reads it from GET /auth/session, which only a page of outboxd's
// own origin can read (there are no CORS headers). Requests with a bearer
// token need no CSRF token: a browser never adds one by itself.
//
// The libraries: golang.org/x/oauth2 (the code exchange, PKCE) and
// github.com/coreos/go-oidc/v3 (discovery, the ID token's verification).
package signin
