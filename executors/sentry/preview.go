package sentry

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

// previewUpdateIssue reads the issue as it is and renders the fields
// update_issue changes, before → after. A field set to its current value
// is not a change.
func (s *client) previewUpdateIssue(ctx context.Context, p *UpdateIssueParams, ec executors.ExecContext) (*executors.Preview, error) {
	ans, err := s.api.Do(ctx, ec, &httpsource.Request{
		Method:   http.MethodGet,
		Segments: issuePath(p.OrganizationSlug, p.IssueID),
		Subject:  issueSubject(p.OrganizationSlug, p.IssueID),
	})
	if err != nil {
		return nil, err
	}
	var cur struct {
		ShortID    string          `json:"shortId"`
		Title      string          `json:"title"`
		Status     string          `json:"status"`
		AssignedTo json.RawMessage `json:"assignedTo"`
	}
	if err := json.Unmarshal(ans.Body, &cur); err != nil {
		return nil, &executors.Error{Code: "invalid_response", Message: "Sentry's issue is not the expected JSON", Retryable: true}
	}
	out := &executors.Preview{Kind: executors.PreviewDiff, Title: "Update " + cur.ShortID + ": " + cur.Title}
	if p.Status != nil && *p.Status != cur.Status {
		out.Changes = append(out.Changes, executors.PreviewChange{Field: "status", Before: cur.Status, After: *p.Status})
	}
	if p.AssignedTo != nil {
		before, ids := assignee(cur.AssignedTo)
		if !ids[*p.AssignedTo] {
			out.Changes = append(out.Changes, executors.PreviewChange{Field: "assignee", Before: before, After: *p.AssignedTo})
		}
	}
	return out, nil
}

// assignee reads an issue's assignedTo: null, or an actor {type, id,
// name, email}. It returns what to show and every way update_issue may
// name the same assignee ("" for none).
func assignee(raw json.RawMessage) (string, map[string]bool) {
	var actor *struct {
		Type  string `json:"type"`
		ID    string `json:"id"`
		Name  string `json:"name"`
		Email string `json:"email"`
	}
	if json.Unmarshal(raw, &actor) != nil {
		// Not an actor: a plain string, as some versions answer.
		var s string
		_ = json.Unmarshal(raw, &s)
		return s, map[string]bool{s: true}
	}
	if actor == nil {
		return "", map[string]bool{"": true}
	}
	show := actor.Name
	if show == "" {
		show = actor.Email
	}
	ids := map[string]bool{actor.Type + ":" + actor.ID: true}
	for _, n := range []string{actor.Name, actor.Email} {
		if n != "" {
			ids[n] = true
		}
	}
	return show, ids
}
