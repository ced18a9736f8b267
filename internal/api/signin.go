package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/revocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// ConsoleSignIn signs people in to the console with the identity provider
// (package signin): the flow's two legs, the session a cookie holds and
// signing out.
type ConsoleSignIn interface {
	Start(r *http.Request) (location string, cookie *http.Cookie, err error)
	Finish(r *http.Request) (location string, cookies []*http.Cookie, err error)
	Session(r *http.Request) (*signin.Session, error)
	SignOut(r *http.Request) (clear *http.Cookie, endSessionURL string)
}

// signInRoutes are the console sign-in's routes, served whether or not
// sign-in is configured: GET /auth/config says which, the others answer
// 404 without it.
func (s *Server) signInRoutes() []publicRoute {
	return []publicRoute{
		{"GET", "/auth/config", http.HandlerFunc(s.signInConfig)},
		{"GET", "/auth/login", s.withSignIn(s.signInStart)},
		{"GET", "/auth/callback", s.withSignIn(s.signInFinish)},
		{"GET", "/auth/session", s.withSignIn(s.signInSession)},
		{"POST", "/auth/logout", s.withSignIn(s.signOut)},
	}
}

// callerClaims authenticates a request: by its bearer token when it has
// an Authorization header, else by its console session cookie when it has
// one. A request a session cookie authenticates that may change something
// (any method but GET and HEAD) must carry the session's CSRF token, and
// one naming another person in SubjectHeader is refused whatever its
// method.
func (s *Server) callerClaims(r *http.Request) (*auth.Claims, error) {
	if s.console == nil || r.Header.Get("Authorization") != "" {
		return s.bearerClaims(r)
	}
	sess, err := s.console.Session(r)
	switch {
	case errors.Is(err, signin.ErrNoSession):
		return s.bearerClaims(r)
	case err != nil:
		return nil, &apiError{status: http.StatusUnauthorized, code: "unauthorized", message: err.Error()}
	}
	if s.sessionRevoked(sess) {
		return nil, revokedSession()
	}
	if !forSubject(r, sess.Claims) {
		return nil, sessionChanged()
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !sess.CheckCSRF(r.Header.Get(signin.CSRFHeader)) {
		return nil, csrfRefused()
	}
	return sess.Claims, nil
}

// SubjectHeader names the person a console request is made for, as
// "<org>/<sub>" with each part percent-encoded (encodeURIComponent): the
// person GET /auth/session named when the console's tab read it. The
// session cookie is the browser's, shared by its tabs: after another
// person signed in elsewhere, a tab still showing the first one would
// otherwise read and act with the new person's cookie under the first
// one's name.
const SubjectHeader = "X-Outboxd-Subject"

// forSubject reports whether r is made for the person of c: it names them
// in SubjectHeader, or names no one (a client that does not send it).
func forSubject(r *http.Request, c *auth.Claims) bool {
	v := r.Header.Get(SubjectHeader)
	if v == "" {
		return true
	}
	org, sub, ok := strings.Cut(v, "/")
	if !ok {
		return false
	}
	org, err := url.PathUnescape(org)
	if err != nil {
		return false
	}
	sub, err = url.PathUnescape(sub)
	return err == nil && org == c.Org && sub == c.Subject
}

func sessionChanged() *apiError {
	return &apiError{status: http.StatusUnauthorized, code: "session_changed",
		message: "this request was made for another person than the one the console's session cookie now signs in (this browser signed in as someone else since the page read its session): nothing was done; reload the console"}
}

// sessionRevoked reports whether a revocation ends sess. A session's
// claims are its ID token's: revoking the token (by jti, or every token
// issued before a time) ends the session.
func (s *Server) sessionRevoked(sess *signin.Session) bool {
	return s.revocations != nil && s.revocations.Revoked(sess.Claims)
}

func revokedSession() *apiError {
	return &apiError{status: http.StatusUnauthorized, code: "token_revoked", message: "token revoked"}
}

// sessionEnded is GET /auth/session's answer to a request without a valid
// session, whose code tells the console why (of this request's cookie
// only): no_session, session_expired or session_invalid.
func sessionEnded(err error) *apiError {
	e := &apiError{status: http.StatusUnauthorized, code: "session_invalid", message: err.Error() +
		" (altered, or sealed with a secrets.key no longer configured)"}
	switch {
	case errors.Is(err, signin.ErrNoSession):
		e.code, e.message = "no_session", "no console session: sign in"
	case errors.Is(err, signin.ErrSessionExpired):
		e.code, e.message = "session_expired", err.Error()
	}
	return e
}

func csrfRefused() *apiError {
	return &apiError{status: http.StatusForbidden, code: "csrf_token_invalid",
		message: "a request signed in by the console's session cookie must carry the session's CSRF token in the " + signin.CSRFHeader + " header (GET /auth/session gives it)"}
}

// withSignIn answers 404 while console sign-in is not configured.
func (s *Server) withSignIn(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if s.console == nil {
			writeError(w, &apiError{status: http.StatusNotFound, code: "sign_in_not_configured",
				message: "console sign-in is not configured (console.oidc.client_id and auth.idp.issuer)"})
			return
		}
		h(w, r)
	})
}

// signInConfig tells the console whether to offer signing in with the
// identity provider.
func (s *Server) signInConfig(w http.ResponseWriter, _ *http.Request) {
	body := map[string]any{"oidc": s.console != nil}
	if s.console != nil {
		body["login_url"] = "/auth/login"
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) signInStart(w http.ResponseWriter, r *http.Request) {
	location, cookie, err := s.console.Start(r)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	http.SetCookie(w, cookie)
	http.Redirect(w, r, location, http.StatusFound)
}

// signInStatus is the HTTP status of each kind of refused sign-in.
var signInStatus = map[signin.Kind]int{
	signin.Invalid:     http.StatusBadRequest,
	signin.Refused:     http.StatusForbidden,
	signin.Unavailable: http.StatusBadGateway,
}

func (s *Server) signInFinish(w http.ResponseWriter, r *http.Request) {
	location, cookies, err := s.console.Finish(r)
	var se *signin.Error
	if errors.As(err, &se) {
		s.logger.WarnContext(r.Context(), "console sign-in refused", "code", se.Code, "error", se.Message)
		writeError(w, &apiError{status: signInStatus[se.Kind], code: se.Code, message: se.Message})
		return
	}
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	for _, c := range cookies {
		http.SetCookie(w, c)
	}
	// The address bar drops the code and the state.
	http.Redirect(w, r, location, http.StatusSeeOther)
}

// signInSession is the signed-in person as the console shows them, with
// the CSRF token its mutating requests carry.
func (s *Server) signInSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.console.Session(r)
	if err != nil {
		writeError(w, sessionEnded(err))
		return
	}
	if s.sessionRevoked(sess) {
		// Its CSRF token and who it was are no longer the browser's.
		writeError(w, &apiError{status: http.StatusUnauthorized, code: "session_revoked",
			message: "the session was revoked: it was signed out, or an owner revoked its tokens"})
		return
	}
	c := sess.Claims
	body := map[string]any{
		"org": c.Org, "sub": c.Subject, "kind": c.Kind, "role": c.Role,
		"expires_at": c.ExpiresAt.UTC().Format(time.RFC3339), "csrf_token": sess.CSRF,
	}
	writeJSON(w, http.StatusOK, body)
}

// signOut clears the session cookie, ends the session for good (a
// revocation of its id until it expires, so a copy of the cookie is
// refused too) and says where the browser ends its session at the
// provider. With a valid session it takes the CSRF token, so another site
// cannot sign a person out.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	sess, err := s.console.Session(r)
	if err == nil && !sess.CheckCSRF(r.Header.Get(signin.CSRFHeader)) {
		writeError(w, csrfRefused())
		return
	}
	clear, endSession := s.console.SignOut(r)
	http.SetCookie(w, clear)
	if err == nil && s.revocations != nil && sess.Claims.ID != "" {
		c := sess.Claims
		// A public route: the caller's organization is the session's.
		ctx := dbutil.WithOrg(r.Context(), c.Org)
		rev, err := s.revocations.Revoke(ctx, c.Org, &revocation.Params{JTI: c.ID, TokenExpiresAt: &c.ExpiresAt.Time, By: c.Subject})
		if err == nil {
			// The revocation is in the audit trail as an owner's is, by
			// the person who signed out.
			rr := r.WithContext(audit.WithActor(context.WithValue(ctx, claimsKey{}, c), s.actor(r, c)))
			s.record(rr, &audit.Change{Action: "tokens.revoke", TargetType: "revocation", TargetID: strconv.FormatInt(rev.ID, 10),
				After: revokedView{viewRevocation(&rev), rev.Withdrawn}})
		}
		if err != nil {
			s.logger.ErrorContext(ctx, "signing out: revoking the console session", "organization_id", c.Org, "error", err)
			writeError(w, &apiError{status: http.StatusServiceUnavailable, code: "sign_out_incomplete",
				message: "the cookie is cleared, but the server could not revoke the session: a copy of its cookie stays valid until " +
					c.ExpiresAt.UTC().Format(time.RFC3339) + " unless an owner revokes its tokens (POST /v1/revocations)"})
			return
		}
	}
	body := map[string]any{}
	if endSession != "" {
		body["end_session_url"] = endSession
	}
	writeJSON(w, http.StatusOK, body)
}
