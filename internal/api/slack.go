package api

import (
	"encoding/json"
	"net/http"

	"github.com/outboxd/outboxd/internal/domain/audit"
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

func writeSlackSettings(w http.ResponseWriter, st slackapproval.Settings) {
	writeJSON(w, http.StatusOK, viewSlackSettings(st))
}

// slackBefore is the Slack settings before a change, for the audit trail
// (nil when nothing is recorded).
func (s *Server) slackBefore(r *http.Request, c *auth.Claims) (*slackSettingsView, error) {
	if s.audit == nil {
		return nil, nil
	}
	st, err := s.slack.Get(r.Context(), c.Org)
	if err != nil {
		return nil, err
	}
	v := viewSlackSettings(st)
	return &v, nil
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
	before, err := s.slackBefore(r, c)
	if err != nil {
		return err
	}
	st, err := s.slack.PutChannel(r.Context(), c.Org, c.Subject, body.Channel)
	if err != nil {
		return err
	}
	s.record(r, &audit.Change{Action: "slack_settings.set_channel", TargetType: "slack_settings", Before: before, After: viewSlackSettings(st)})
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
		var a approverView
		if err := json.Unmarshal(raw, &a); err != nil {
			return invalidField(id, "%s must be {\"user_id\", \"role\"}", id)
		}
		approvers[id] = slackapproval.Approver(a)
	}
	before, err := s.slackBefore(r, c)
	if err != nil {
		return err
	}
	st, err := s.slack.PutApprovers(r.Context(), c.Org, c.Subject, approvers)
	if err != nil {
		return err
	}
	s.record(r, &audit.Change{Action: "slack_settings.replace_approvers", TargetType: "slack_settings", Before: before, After: viewSlackSettings(st)})
	writeSlackSettings(w, st)
	return nil
}
