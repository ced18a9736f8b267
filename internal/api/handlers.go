package api

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/grant"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/settings"
	"github.com/outboxd/outboxd/internal/platform/httpserver"
	"github.com/outboxd/outboxd/outbox"
)

type invokeBody struct {
	Integration string          `json:"integration"`
	Action      string          `json:"action"`
	Params      json.RawMessage `json:"params"`
}

func (s *Server) invoke(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	sessionID := r.PathValue("session_id")
	var body invokeBody
	if err := decode(r, &body, false); err != nil {
		return err
	}
	// An allow-mode invoke waits for its worker before it answers.
	httpserver.ExtendWrite(w, r, s.syncWait)
	key := r.Header.Get("Idempotency-Key")
	if len(key) > 255 {
		return badRequest("invalid_request", "Idempotency-Key must be at most 255 characters")
	}
	inv, err := s.svc.Invoke(r.Context(), &outbox.InvokeParams{
		OrganizationID: c.Org,
		SessionID:      sessionID,
		AutomationID:   c.AutomationID,
		UserID:         c.UserID,
		RequestedBy:    c.Subject,
		Sources:        c.Sources,
		Token:          c,
		Integration:    body.Integration,
		Action:         body.Action,
		Params:         body.Params,
		IdempotencyKey: key,
	})
	if err != nil {
		return err
	}
	writeInvokeOutcome(w, inv)
	return nil
}

// writeInvokeOutcome answers an invoke by where its invocation stands.
func writeInvokeOutcome(w http.ResponseWriter, inv invocation.Invocation) {
	view := viewInvocation(inv)
	switch inv.Status {
	case invocation.StatusCompleted, invocation.StatusSkipped:
		writeJSON(w, http.StatusOK, map[string]any{"invocation": view, "result": json.RawMessage(orNull(inv.Result))})
	case invocation.StatusPending:
		writeJSON(w, http.StatusAccepted, map[string]any{
			"invocation": view, "invocation_id": inv.ID, "status": inv.Status,
			"message": "Action requires approval; poll the invocation or wait for a human decision",
		})
	case invocation.StatusApproved, invocation.StatusExecuting:
		writeJSON(w, http.StatusAccepted, map[string]any{
			"invocation": view, "invocation_id": inv.ID, "status": invocation.StatusApproved,
			"message": "Action is queued and has not finished yet; poll the invocation",
		})
	case invocation.StatusDenied:
		writeJSON(w, http.StatusForbidden, map[string]any{"invocation": view, "error": errorBody(&apiError{
			code: "action_denied", message: "action denied (" + deref(inv.DeniedReason) + ")",
		})})
	case invocation.StatusFailed:
		writeJSON(w, http.StatusBadGateway, map[string]any{"invocation": view, "error": errorBody(&apiError{
			code: "action_failed", message: deref(inv.Error),
		})})
	case invocation.StatusExpired:
		writeJSON(w, http.StatusGone, map[string]any{"invocation": view, "error": errorBody(&apiError{
			code: "expired", message: "the approval window closed",
		})})
	default:
		writeJSON(w, http.StatusConflict, map[string]any{"invocation": view, "error": errorBody(&apiError{
			code: "conflict", message: "invocation is " + string(inv.Status),
		})})
	}
}

func caller(c *auth.Claims) *catalog.Caller {
	return &catalog.Caller{OrganizationID: c.Org, AutomationID: c.AutomationID, UserID: c.UserID, Sources: c.Sources}
}

// available serves the catalog a caller may use. With
// ?include=unavailable (admins and owners: the console's Modes page) it
// also lists the actions of the providers with no credential stored,
// disabled, their source's status no_credential.
func (s *Server) available(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	list := s.catalog.Available
	switch r.URL.Query().Get("include") {
	case "":
	case "unavailable":
		if !c.CanAdminister() {
			return forbidden("include=unavailable is for admins and owners")
		}
		list = s.catalog.All
	default:
		return invalidField("include", "include must be unavailable")
	}
	cat, err := list(r.Context(), caller(c))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewListing(cat))
	return nil
}

func (s *Server) guide(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	md, err := s.catalog.Guide(r.Context(), caller(c), r.PathValue("integration"))
	if err != nil {
		return err
	}
	writeMarkdown(w, md)
	return nil
}

func (s *Server) bootstrapGuide(w http.ResponseWriter, _ *http.Request, _ *auth.Claims) error {
	writeMarkdown(w, catalog.BootstrapGuide)
	return nil
}

func writeMarkdown(w http.ResponseWriter, md string) {
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(md))
}

// listSession lists a session's invocations, newest first: those of the
// sources the token's sources claim allows (as its event stream shows
// them), filtered in the query so that a page is full.
func (s *Server) listSession(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	sessionID := r.PathValue("session_id")
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	invs, err := s.svc.ListSession(r.Context(), c.Org, sessionID, c.Sources, page)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"invocations": viewInvocations(invs)})
	return nil
}

// getInSession answers one invocation of the session; one of a source the
// token's sources claim does not allow is not found, as an unknown id is.
func (s *Server) getInSession(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	sessionID := r.PathValue("session_id")
	inv, err := s.svc.GetInSession(r.Context(), c.Org, sessionID, r.PathValue("id"), c.Sources)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"invocation": viewInvocation(inv)})
	return nil
}

// getInvocation answers one invocation: a sandbox's of its own session; of
// a source the token's sources claim allows.
func (s *Server) getInvocation(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var (
		inv invocation.Invocation
		err error
	)
	if c.Kind == auth.KindSandbox {
		inv, err = s.svc.GetInSession(r.Context(), c.Org, c.SessionID, r.PathValue("id"), c.Sources)
	} else {
		inv, err = s.svc.Get(r.Context(), c.Org, r.PathValue("id"), c.Sources)
	}
	if err != nil {
		return err
	}
	view := s.viewWithApprovals(r, c, inv)
	if view.Preview, err = s.preview(r.Context(), inv); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"invocation": view})
	return nil
}

// listOrg lists the organization's invocations, newest first, filtered by
// status, source, origin (invoke or envelope), session_id, automation_id
// and a created_at range
// (created_after inclusive, created_before exclusive, RFC 3339); only
// those of the sources the token's sources claim allows, total included.
func (s *Server) listOrg(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	q := r.URL.Query()
	f := invocation.ListFilter{
		Status: invocation.Status(q.Get("status")), Integration: q.Get("source"),
		Origin: q.Get("origin"), SessionID: q.Get("session_id"), AutomationID: q.Get("automation_id"),
		Sources: c.Sources,
	}
	if f.Origin != "" && f.Origin != "invoke" && f.Origin != "envelope" && f.Origin != "mcp" {
		return invalidField("origin", `origin must be "invoke", "envelope" or "mcp"`)
	}
	if f.Status != "" && !f.Status.Valid() {
		return invalidField("status", "unknown status %s", strconv.Quote(string(f.Status)))
	}
	for name, dst := range map[string]**time.Time{"created_after": &f.CreatedAfter, "created_before": &f.CreatedBefore} {
		raw := q.Get(name)
		if raw == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			return invalidField(name, "%s must be an RFC 3339 time such as 2026-11-21T18:00:00Z", name)
		}
		*dst = &t
	}
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	invs, total, err := s.svc.ListOrg(r.Context(), c.Org, f, page)
	if err != nil {
		return err
	}
	views := viewInvocations(invs)
	if err := s.addApprovals(r, c, invs, views); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"invocations": views, "total": total})
	return nil
}

// events answers an invocation's timeline. A sandbox sees the invocations
// of its own session only; a token those of the sources its sources claim
// allows.
func (s *Server) events(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	sessionID := r.PathValue("session_id")
	if c.Kind == auth.KindSandbox {
		sessionID = c.SessionID
	}
	id := r.PathValue("id")
	if sessionID != "" {
		if _, err := s.svc.GetInSession(r.Context(), c.Org, sessionID, id, c.Sources); err != nil {
			return err
		}
	}
	events, err := s.svc.Events(r.Context(), c.Org, id, c.Sources)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": viewEvents(events)})
	return nil
}

// resultEnvelope answers an invocation's result in the Action API
// contract's shape. A sandbox sees the invocations of its own session only,
// a token those of the sources its sources claim allows; an invocation
// still cleared to run or running has no result yet (409).
func (s *Server) resultEnvelope(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	sessionID := r.PathValue("session_id")
	if c.Kind == auth.KindSandbox {
		sessionID = c.SessionID
	}
	var (
		inv invocation.Invocation
		err error
	)
	if sessionID != "" {
		inv, err = s.svc.GetInSession(r.Context(), c.Org, sessionID, r.PathValue("id"), c.Sources)
	} else {
		inv, err = s.svc.Get(r.Context(), c.Org, r.PathValue("id"), c.Sources)
	}
	if err != nil {
		return err
	}
	env, ok := outbox.ResultEnvelopeOf(inv)
	if !ok {
		return &apiError{status: http.StatusConflict, code: "not_finished",
			message: "the invocation is " + string(inv.Status) + ": it has no result yet",
			details: map[string]any{"invocation_status": inv.Status}}
	}
	writeJSON(w, http.StatusOK, viewResultEnvelope(env))
	return nil
}

func pageParams(r *http.Request) (invocation.Page, error) {
	var p invocation.Page
	for name, dst := range map[string]*int{"limit": &p.Limit, "offset": &p.Offset} {
		raw := r.URL.Query().Get(name)
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 || (name == "limit" && n > 100) || n > math.MaxInt32 {
			return p, invalidField(name, "%s must be an integer between 0 and 100 (limit) or between 0 and %d (offset)", name, math.MaxInt32)
		}
		*dst = n
	}
	return p, nil
}

// intentDigestPrefix is an intent digest as shown: 12 (intent.short) to
// 64 (intent.digest) lowercase hex characters.
var intentDigestPrefix = regexp.MustCompile(`^[0-9a-f]{12,64}$`)

type approveBody struct {
	Mode string `json:"mode"`
	// Grant also lets the next invocations like this one through
	// (internal/domain/grant); only with mode "once".
	Grant *grant.Spec `json:"grant"`
	// Params, when set, replace the invocation's params before the
	// approval (an edit: the full params object).
	Params json.RawMessage `json:"params"`
	// Digest is the intent digest the approver reviewed (its first 12
	// characters or more): another one by then is a 409.
	Digest string `json:"digest"`
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := s.checkSessionPath(r, c); err != nil {
		return err
	}
	body := approveBody{Mode: "once"}
	if r.ContentLength != 0 {
		if err := decode(r, &body, false); err != nil {
			return err
		}
	}
	if body.Mode != "once" && body.Mode != "always" {
		return badRequest("invalid_request", `mode must be "once" or "always"`)
	}
	if body.Digest != "" && !intentDigestPrefix.MatchString(body.Digest) {
		return errs.Invalid("digest", "digest must be the intent digest reviewed: 12 to 64 lowercase hex characters (intent.short or intent.digest)")
	}
	if body.Grant != nil {
		if body.Mode == "always" {
			return badRequest("invalid_request", `a grant goes with mode "once": "always" already allows every later invocation`)
		}
		if err := body.Grant.Validate(); err != nil {
			return err
		}
	}
	inv, err := s.svc.Approve(r.Context(), &outbox.ApproveParams{
		OrganizationID: c.Org, InvocationID: r.PathValue("id"), UserID: c.Subject, Role: string(c.Role), Always: body.Mode == "always", Grant: body.Grant,
		Params: editedParams(body.Params), Digest: body.Digest, Sources: c.Sources,
	})
	if err != nil {
		return err
	}
	answer := map[string]any{"invocation": s.viewWithApprovals(r, c, inv)}
	if body.Grant != nil {
		if g := s.grantCreated(r, c, inv); g != nil {
			answer["grant"] = g
		}
	}
	writeJSON(w, http.StatusOK, answer)
	return nil
}

type denyBody struct {
	Reason string `json:"reason"`
}

func (s *Server) deny(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := s.checkSessionPath(r, c); err != nil {
		return err
	}
	var body denyBody
	if r.ContentLength != 0 {
		if err := decode(r, &body, false); err != nil {
			return err
		}
	}
	if utf8.RuneCountInString(body.Reason) > 2000 {
		return badRequest("invalid_request", "reason must be at most 2000 characters")
	}
	inv, err := s.svc.Deny(r.Context(), &outbox.DenyParams{
		OrganizationID: c.Org, InvocationID: r.PathValue("id"), UserID: c.Subject, Role: string(c.Role), Reason: body.Reason, Sources: c.Sources,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"invocation": viewInvocation(inv)})
	return nil
}

// checkSessionPath makes the session-scoped approve/deny routes refuse an
// invocation of another session, or of a source the token's sources claim
// does not allow (which the decision itself refuses on every route), as
// an unknown id.
func (s *Server) checkSessionPath(r *http.Request, c *auth.Claims) error {
	sessionID := r.PathValue("session_id")
	if sessionID == "" {
		return nil
	}
	_, err := s.svc.GetInSession(r.Context(), c.Org, sessionID, r.PathValue("id"), c.Sources)
	return err
}

func (s *Server) getModes(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	modes, err := s.settings.GetModes(r.Context(), c.Org, r.PathValue("automation_id"))
	if err != nil {
		return err
	}
	setETag(w, settings.ETag(modes))
	writeJSON(w, http.StatusOK, modesInClaim(c, modes))
	return nil
}

// putModes replaces the overrides of the org or of one automation. A
// token with a sources claim names only its sources' actions (else 403
// source_not_allowed, nothing changed) and replaces only their overrides,
// in the settings' one transaction (settings.PutModesOf): the others are
// kept as they are. The ETag, here and on GET, is of every
// override, so that If-Match guards the whole replacement.
func (s *Server) putModes(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var body map[string]string
	if err := decode(r, &body, false); err != nil {
		return err
	}
	if body == nil {
		// A JSON null would otherwise replace every override with none.
		return badRequest("invalid_json", `request body must be a JSON object of "<source>:<action>": mode`)
	}
	modes, err := s.settings.PutModesOf(r.Context(), c.Org, r.PathValue("automation_id"), c.Subject, c.Sources, body, r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	setETag(w, settings.ETag(modes))
	writeJSON(w, http.StatusOK, modesInClaim(c, modes))
	return nil
}

func (s *Server) listCredentials(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	infos, err := s.settings.ListCredentials(r.Context(), c.Org)
	if err != nil {
		return err
	}
	infos = inClaim(c, infos, func(i credential.Info) string { return i.Integration })
	providers := inClaim(c, s.catalog.CredentialProviders(), func(p catalog.CredentialProvider) string { return p.Integration })
	writeJSON(w, http.StatusOK, map[string]any{
		"credentials": viewEach(infos, func(i credential.Info) credentialView { return credentialView(i) }),
		"providers": viewEach(providers, func(p catalog.CredentialProvider) credentialProviderView {
			return credentialProviderView(p)
		}),
	})
	return nil
}

// credentialProviderView is a provider a credential may be stored for,
// whether or not one is; it converts from catalog.CredentialProvider.
type credentialProviderView struct {
	Integration string `json:"integration"`
	Name        string `json:"name,omitempty"`
}

// credentialView is what the API shows of a stored credential, never its
// token; it converts from credential.Info, so the two keep the same
// fields.
type credentialView struct {
	Integration string    `json:"integration"`
	UserID      string    `json:"user_id,omitempty"`
	TokenKind   string    `json:"token_kind,omitempty"`
	UpdatedBy   string    `json:"updated_by"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	Note        string    `json:"note,omitempty"`
}

type credentialBody struct {
	Token     string `json:"token"`
	TokenKind string `json:"token_kind"`
	UserID    string `json:"user_id"`
}

func (s *Server) putCredential(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var body credentialBody
	if err := decode(r, &body, false); err != nil {
		return err
	}
	integration := r.PathValue("integration")
	if err := sourceAllowed(c, integration); err != nil {
		return err
	}
	before, err := s.credentialBefore(r, c, integration, body.UserID)
	if err != nil {
		return err
	}
	info, revoked, err := s.settings.PutCredential(r.Context(), &settings.PutCredentialParams{
		OrganizationID: c.Org, Integration: integration, UserID: body.UserID,
		TokenKind: body.TokenKind, Token: body.Token, By: c.Subject,
	})
	if err != nil {
		return err
	}
	change := &audit.Change{Action: "credential.store", TargetType: "credential", TargetID: integration, Before: before, Sources: []string{integration},
		After: struct {
			credentialView
			TokenReplaced bool `json:"token_replaced"`
		}{credentialView(info), before != nil}}
	if body.UserID != "" {
		change.TargetID += "/" + body.UserID
	}
	if before != nil {
		change.Action = "credential.replace"
	}
	s.record(r, change)
	s.recordRevokedGrants(r, revoked, integration)
	writeJSON(w, http.StatusOK, map[string]any{"credential": credentialView(info)})
	return nil
}

// deleteCredential deletes the organization's credential of an
// integration, or one user's with ?user_id=.
func (s *Server) deleteCredential(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	userID := r.URL.Query().Get("user_id")
	if len(userID) > 255 {
		return invalidField("user_id", "user_id must be at most 255 characters")
	}
	integration := r.PathValue("integration")
	if err := sourceAllowed(c, integration); err != nil {
		return err
	}
	before, err := s.credentialBefore(r, c, integration, userID)
	if err != nil {
		return err
	}
	revoked, err := s.settings.DeleteCredential(r.Context(), c.Org, integration, userID)
	if err != nil {
		return err
	}
	change := &audit.Change{Action: "credential.delete", TargetType: "credential", TargetID: integration, Before: before, Sources: []string{integration}}
	if userID != "" {
		change.TargetID += "/" + userID
	}
	s.record(r, change)
	s.recordRevokedGrants(r, revoked, integration)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// credentialBefore is the organization's credential of integration for
// userID before a change, for the audit trail (nil when there is none or
// nothing is recorded): what is known of it, never its token.
func (s *Server) credentialBefore(r *http.Request, c *auth.Claims, integration, userID string) (*credentialView, error) {
	if s.audit == nil {
		return nil, nil
	}
	infos, err := s.settings.ListCredentials(r.Context(), c.Org)
	if err != nil {
		return nil, err
	}
	for _, i := range infos {
		if i.Integration == integration && i.UserID == userID {
			v := credentialView(i)
			return &v, nil
		}
	}
	return nil, nil
}

func (s *Server) enqueue(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var env Envelope
	// Envelopes may carry the seed's read-only fields (result, timestamps,
	// tenant_id...); they are ignored rather than refused.
	if err := decode(r, &env, true); err != nil {
		return err
	}
	inv, created, err := s.svc.Enqueue(r.Context(), &outbox.EnqueueParams{Enqueuer: *enqueuer(c), Envelope: env.envelope()})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, viewEnvelope(inv))
	return nil
}

func enqueuer(c *auth.Claims) *outbox.Enqueuer {
	return &outbox.Enqueuer{OrganizationID: c.Org, RequestedBy: c.Subject, AutomationID: c.AutomationID, UserID: c.UserID, Sources: c.Sources, Token: c}
}

// enqueueBatch answers each envelope of a batch in request order: its
// envelope view with "created", or its own error. An envelope whose token
// was revoked after its check let the batch in is recorded and withdrawn
// (invocation.RevokedError): its error is token_revoked, and when every
// envelope's is, the batch is answered as a revoked token is, 401.
func (s *Server) enqueueBatch(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	bodies, decodeErrs, err := decodeBatch(r)
	if err != nil {
		return err
	}
	// The envelopes that decoded go to the outbox; the others are answered
	// with their own error.
	items := make([]outbox.BatchItem, len(bodies))
	var (
		envs  []outbox.Envelope
		owner []int // item of each of envs
	)
	for i := range bodies {
		if decodeErrs[i] != nil {
			items[i].Err = decodeErrs[i]
			continue
		}
		envs = append(envs, bodies[i].envelope())
		owner = append(owner, i)
	}
	if len(envs) > 0 {
		enqueued, err := s.svc.EnqueueBatch(r.Context(), enqueuer(c), envs)
		if err != nil {
			return err
		}
		for k, item := range enqueued {
			items[owner[k]] = item
		}
	}
	if !slices.ContainsFunc(items, func(item outbox.BatchItem) bool { return !errors.Is(item.Err, auth.ErrTokenRevoked) }) {
		return tokenRevoked()
	}
	out := make([]any, len(items))
	for i, item := range items {
		if item.Err != nil {
			ae := toAPIError(item.Err)
			if ae == nil {
				s.logger.ErrorContext(r.Context(), "batch item failed", "item", i, "error", item.Err)
				ae = &apiError{status: http.StatusInternalServerError, code: "internal", message: "internal error"}
			}
			out[i] = map[string]any{"error": errorBody(ae)}
			continue
		}
		out[i] = batchEnvelopeView{envelopeView: viewEnvelope(item.Invocation), Created: item.Created}
	}
	writeJSON(w, http.StatusOK, map[string]any{"envelopes": out})
	return nil
}

// batchEnvelopeView is an envelope in a batch answer.
type batchEnvelopeView struct {
	envelopeView
	Created bool `json:"created"`
}

func (s *Server) getEnvelope(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	inv, err := s.envelopeFor(r, c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewEnvelope(inv))
	return nil
}

func (s *Server) cancelEnvelope(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if _, err := s.envelopeFor(r, c); err != nil {
		return err
	}
	inv, err := s.svc.Cancel(r.Context(), c.Org, r.PathValue("id"), c.Subject)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewEnvelope(inv))
	return nil
}

// envelopeFor loads the path's envelope as the caller may see it: a service
// token sees only its own automation's envelopes (with no automation claim,
// the ones it enqueued without an automation), and any token only those of
// the sources its sources claim allows; anything else is not found, as an
// unknown id is.
func (s *Server) envelopeFor(r *http.Request, c *auth.Claims) (invocation.Invocation, error) {
	id := r.PathValue("id")
	inv, err := s.svc.GetEnvelope(r.Context(), c.Org, id, c.Sources)
	if err != nil || c.Kind != auth.KindService {
		return inv, err
	}
	own := deref(inv.AutomationID) == c.AutomationID
	if c.AutomationID == "" {
		own = inv.AutomationID == nil && inv.RequestedBy == c.Subject
	}
	if !own {
		return invocation.Invocation{}, outbox.NotFound(id)
	}
	return inv, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}
