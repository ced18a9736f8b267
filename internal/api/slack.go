package api

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
)

type slackSettingsView struct {
	Channel   *string                 `json:"channel"`
	Approvers map[string]approverView `json:"approvers"`
}

// approverView is who a Slack user approves as, in answers and request
// bodies; it converts from and to slackapproval.Approver, so the two keep
// the same fields.
type approverView struct {
	UserID string `json:"user_id"`
	Role   string `json:"role"`
}

func viewSlackSettings(st slackapproval.Settings) slackSettingsView {
	approvers := viewEachValue(st.Approvers, func(a slackapproval.Approver) approverView { return approverView(a) })
	return slackSettingsView{Channel: st.Channel, Approvers: approvers}
}

// writeSlackSettings answers the settings with their ETag, which a change
// may name in If-Match.
func writeSlackSettings(w http.ResponseWriter, st slackapproval.Settings) {
	setETag(w, slackapproval.ETag(st))
	writeJSON(w, http.StatusOK, viewSlackSettings(st))
}

func (s *Server) getSlackSettings(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	st, err := s.slack.Get(r.Context(), c.Org)
	if err != nil {
		return err
	}
	writeSlackSettings(w, st)
	return nil
}

// putSlackChannel takes {"channel": "C0123" | null}.
func (s *Server) putSlackChannel(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var body struct {
		Channel *string `json:"channel"`
	}
	if err := decode(r, &body, false); err != nil {
		return err
	}
	st, err := s.slack.PutChannel(r.Context(), c.Org, c.Subject, body.Channel, r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	writeSlackSettings(w, st)
	return nil
}

// putSlackApprovers takes {"<slack user id>": {"user_id", "role"}} and
// replaces the organization's approvers.
func (s *Server) putSlackApprovers(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var body map[string]json.RawMessage
	if err := decode(r, &body, false); err != nil {
		return err
	}
	approvers := map[string]slackapproval.Approver{}
	for id, raw := range body {
		// Strict, as every body is: a misspelt field is refused, not
		// dropped.
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var a approverView
		if err := dec.Decode(&a); err != nil {
			return invalidField(id, "%s must be {\"user_id\", \"role\"}", id)
		}
		approvers[id] = slackapproval.Approver(a)
	}
	st, err := s.slack.PutApprovers(r.Context(), c.Org, c.Subject, approvers, r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	writeSlackSettings(w, st)
	return nil
}
