// Package auth verifies and mints the bearer JWTs outboxd accepts.
//
// Two kinds of token are accepted, each when configured, both at once if
// both are:
//
//   - HS256 tokens signed with the shared secret auth.jwt_secret: what
//     `outboxd token` and `outboxd dev` mint, and what a platform minting
//     sandbox tokens for its agents signs itself. A previous secret can be
//     accepted besides it until a given time, so the secret is rotated
//     without downtime; Mint always signs with the current one.
//   - RS256, ES256 and EdDSA tokens of the operator's identity provider,
//     checked against its JWK Set by kid (package idp: OpenID Connect
//     discovery or a JWKS URL, keys cached, refreshed periodically and on
//     an unknown kid at a bounded rate), with iss and aud required to be
//     the configured issuer and one of the configured audiences. Their
//     claims are mapped to outboxd's by configured claim names, with
//     defaults for claims the provider does not issue.
//
// The token header's alg chooses which: HS256 is checked against the
// secret only, the others against the identity provider's keys only, so a
// token signed with HS256 and a public key as the secret is refused, as is
// alg none. Every token must carry exp; exp and nbf are checked with a
// leeway, and a configured maximum lifetime refuses tokens valid for
// longer. A revoked token (Config.Revocations, package revocation) is
// refused, whether verified now or remembered from before; so is a
// remembered token of the identity provider whose key the provider no
// longer publishes (once outboxd has fetched its keys again). The Verifier is
// the one check every route, event stream, the MCP front door and the
// Slack settings go through.
//
// The JOSE libraries are golang-jwt (parsing, signatures, claim
// validation), with github.com/MicahParks/keyfunc/v3 and jwkset for the
// identity provider's keys: see package idp for why.
package auth
