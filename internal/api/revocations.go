package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/revocation"
)

// revocationView is a revocation as the API shows it.
type revocationView struct {
	ID           int64   `json:"id"`
	JTI          *string `json:"jti"`
	SessionID    *string `json:"session_id"`
	AutomationID *string `json:"automation_id"`
	Subject      *string `json:"subject"`
	// IssuedBefore is the cut-off: tokens issued before it are refused.
	IssuedBefore time.Time  `json:"issued_before"`
	RevokedBy    string     `json:"revoked_by"`
	RevokedAt    time.Time  `json:"revoked_at"`
	ExpiresAt    *time.Time `json:"expires_at"`
}

func viewRevocation(r *revocation.Revocation) revocationView {
	return revocationView{
		ID: r.ID, JTI: nilIfEmpty(r.JTI), SessionID: nilIfEmpty(r.SessionID), AutomationID: nilIfEmpty(r.AutomationID), Subject: nilIfEmpty(r.Subject),
		IssuedBefore: r.IssuedBefore.UTC(), RevokedBy: r.RevokedBy, RevokedAt: r.RevokedAt.UTC(), ExpiresAt: utcOrNil(r.ExpiresAt),
	}
}

func utcOrNil(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// revokeFields are the fields POST /v1/revocations takes.
var revokeFields = map[string]bool{"jti": true, "session_id": true, "automation_id": true, "subject": true, "issued_before": true, "expires_at": true}

// revoke takes one of {"jti"}, {"session_id"}, {"automation_id"},
// {"subject"} and {"issued_before"} (RFC 3339), and with jti optionally the token's
// "expires_at", and revokes the organization's matching tokens; in the same
// transaction it withdraws the invocations they asked for that have not
// started, and answers how many ("withdrawn").
func (s *Server) revoke(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var body map[string]json.RawMessage
	if err := decode(r, &body, false); err != nil {
		return err
	}
	p := &revocation.Params{By: c.Subject}
	for name, raw := range body {
		if !revokeFields[name] {
			return invalidField(name, "%s is not something to revoke by: name one of jti, session_id, automation_id, subject or issued_before", name)
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil || v == "" {
			return invalidField(name, "%s must be a non-empty string", name)
		}
		switch name {
		case "jti":
			p.JTI = v
		case "session_id":
			p.SessionID = v
		case "automation_id":
			p.AutomationID = v
		case "subject":
			p.Subject = v
		case "issued_before", "expires_at":
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return invalidField(name, "%s must be an RFC 3339 time such as 2026-11-26T09:00:00Z", name)
			}
			if name == "issued_before" {
				p.IssuedBefore = &t
			} else {
				p.TokenExpiresAt = &t
			}
		}
	}
	rev, err := s.revocations.Revoke(r.Context(), c.Org, p)
	if err != nil {
		return err
	}
	view := revokedView{viewRevocation(&rev), rev.Withdrawn}
	s.record(r, &audit.Change{Action: "tokens.revoke", TargetType: "revocation", TargetID: strconv.FormatInt(rev.ID, 10), After: view})
	writeJSON(w, http.StatusCreated, view)
	return nil
}

// revokedView is a new revocation as POST /v1/revocations answers it and
// the audit trail records it: with how many invocations of the revoked
// tokens it withdrew (revocation.Service.SetInvocations).
type revokedView struct {
	revocationView
	Withdrawn int `json:"withdrawn"`
}

// listRevocations lists the organization's revocations in effect, newest
// first.
func (s *Server) listRevocations(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	revs, err := s.revocations.List(r.Context(), c.Org)
	if err != nil {
		return err
	}
	views := make([]revocationView, len(revs))
	for i := range revs {
		views[i] = viewRevocation(&revs[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"revocations": views})
	return nil
}
