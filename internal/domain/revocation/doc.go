// Package revocation revokes bearer tokens before they expire, and tells
// the token verifier (package auth) which verified tokens are revoked.
//
// An organization's owner (POST /v1/revocations) or the operator
// (`outboxd tokens revoke`) revokes one token by its jti, every token of a
// session or of an automation, every token of one person (by subject: the
// verified claims' subject, user tokens and console sessions alike, and
// the sandbox and service tokens acting for them, whose user_id it is),
// or every token of the organization issued before a time. Each revocation
// has a cut-off, issued_before: it refuses only tokens issued before it
// (iat earlier than the cut-off). For a revocation by jti, session,
// automation or subject the cut-off is the revocation's time rounded up to
// the whole second, since iat is in seconds: a token issued in the same
// second counts as issued before, and tokens minted afterwards for the
// same session, automation or person work. A token without iat
// counts as issued before every cut-off: while a revocation is kept, it
// refuses every such token of its selector.
//
// A revocation is dropped once every token it could refuse has expired:
// auth.max_lifetime (plus auth.leeway) after its cut-off, since a token
// issued before the cut-off is valid for at most that long; for a
// revocation by jti given the token's exp, that exp (plus the leeway) when
// earlier. Without either it is kept. Tokens without iat are the exception
// the lifetime cannot bound: the verifier accepts one only within
// max_lifetime of its exp, so every such token usable at the cut-off has
// expired when the revocation is dropped, but one minted before the cut-off
// whose exp lies more than max_lifetime after it becomes usable later and
// is no longer refused. Issue tokens with iat (outboxd's own do).
//
// A revocation also withdraws, in the transaction that stores it, what the
// tokens it refuses asked for and has not started (Service.SetInvocations):
// their pending invocations, which a human who does not know could still
// approve, and their approved ones not yet started are cancelled, with
// their jobs, the cancelled event naming the revocation and the revoker as
// actor. An invocation records its token's session_id, automation_id,
// user_id, subject, jti and iat: those of the revocation's selector (its
// jti's for one by jti) whose token was issued before the cut-off are
// matched, by creation time (before the cut-off) when the token had no
// iat or the invocation predates migration 048.
//
// What a revoked token asks for after the revocation committed, while an
// API process has not refreshed yet or its request was past its check,
// is withdrawn too, in the transaction that records it: that transaction
// looks for its token's revocations after taking the organization's
// revocation lock shared, which a revocation's transaction takes first,
// exclusive (Refusals, revocationstore.Refusing). The invocation is
// recorded, then cancelled as a revocation cancels it, and never runs; the
// request is answered as a revoked token is (invocation.RevokedError: the
// API's 401 token_revoked).
//
// Every API process keeps all organizations' revocations in memory
// (Service.Revoked is a map look-up on every request) and polls one
// version row every Config.RefreshInterval (auth.revocation_refresh); when
// it changed, it loads the revocations again, and ends the event streams
// (Service.Watch) of tokens revoked since. The process that stores a
// revocation loads at once. Each refresh also ends the event streams of
// identity provider tokens whose signing key the provider no longer
// publishes (auth.Claims.KeyPublished), and Ends ends a stream when the
// verifier stops accepting its token (auth.Claims.AcceptedUntil: the end
// of a previous HS256 secret's overlap, a console session's expiry).
package revocation
