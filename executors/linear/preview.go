package linear

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/outboxd/outboxd/executors"
)

// nameQueries read the name of one object by id, for previews.
var nameQueries = map[string]string{
	"user":          `query UserName($id: String!) { user(id: $id) { name } }`,
	"workflowState": `query StateName($id: String!) { workflowState(id: $id) { name } }`,
	"team":          `query TeamName($id: String!) { team(id: $id) { name } }`,
	"issueLabel":    `query LabelName($id: String!) { issueLabel(id: $id) { name } }`,
}

// name reads the name of the object of kind (a key of nameQueries) with
// id. An id Linear does not know is shown as it is, with a note; any other
// failure fails the preview.
func (s *client) name(ctx context.Context, ec executors.ExecContext, kind, id string, out *executors.Preview) (string, error) {
	var data map[string]*struct {
		Name string `json:"name"`
	}
	op := operation{name: kind + "Name", query: nameQueries[kind], variables: map[string]any{"id": id}}
	if err := s.do(ctx, ec, op, &data); err != nil {
		if errorCode(err) == codeNotFound {
			out.Notes = append(out.Notes, fmt.Sprintf("%s %s is shown by its id: Linear does not know it", kind, id))
			return id, nil
		}
		return "", err
	}
	if o := data[kind]; o != nil && o.Name != "" {
		return o.Name, nil
	}
	return id, nil
}

// previewCreateIssue renders create_issue as Linear will create it, with
// the names of its team, state, assignee and labels.
func (s *client) previewCreateIssue(ctx context.Context, p *CreateIssueParams, ec executors.ExecContext) (*executors.Preview, error) {
	out := &executors.Preview{Kind: executors.PreviewIssue, Title: p.Title, Text: p.Description}
	add := func(field, kind, id string) error {
		if id == "" {
			return nil
		}
		n, err := s.name(ctx, ec, kind, id, out)
		if err == nil {
			out.Fields = append(out.Fields, executors.PreviewField{Name: field, Value: n})
		}
		return err
	}
	if err := add("team", "team", p.TeamID); err != nil {
		return nil, err
	}
	if err := add("state", "workflowState", p.StateID); err != nil {
		return nil, err
	}
	if err := add("assignee", "user", p.AssigneeID); err != nil {
		return nil, err
	}
	if len(p.LabelIDs) > 0 {
		names := make([]string, len(p.LabelIDs))
		for i, id := range p.LabelIDs {
			n, err := s.name(ctx, ec, "issueLabel", id, out)
			if err != nil {
				return nil, err
			}
			names[i] = n
		}
		out.Fields = append(out.Fields, executors.PreviewField{Name: "labels", Value: strings.Join(names, ", ")})
	}
	if p.Priority != nil && *p.Priority >= 0 && *p.Priority < len(priorityNames) {
		out.Fields = append(out.Fields, executors.PreviewField{Name: "priority", Value: priorityNames[*p.Priority]})
	}
	return out, nil
}

// priorityNames are Linear's priorities by number.
var priorityNames = []string{"No priority", "Urgent", "High", "Medium", "Low"}

// previewUpdateIssue reads the issue as it is and renders the fields the
// update changes, before → after. A field set to its current value is
// not a change.
func (s *client) previewUpdateIssue(ctx context.Context, p *UpdateIssueParams, ec executors.ExecContext) (*executors.Preview, error) {
	res, err := s.fetchIssue(ctx, ec, p.IssueID)
	if err != nil {
		return nil, err
	}
	var cur struct {
		Identifier  string  `json:"identifier"`
		Title       string  `json:"title"`
		Description *string `json:"description"`
		Priority    int     `json:"priority"`
		State       *struct {
			ID, Name string
		} `json:"state"`
		Assignee *struct {
			ID, Name string
		} `json:"assignee"`
	}
	if err := json.Unmarshal(res.Data, &cur); err != nil {
		return nil, &executors.Error{Code: "invalid_response", Message: "Linear's issue is not the expected JSON", Retryable: true}
	}
	out := &executors.Preview{Kind: executors.PreviewDiff, Title: "Update " + cur.Identifier + ": " + cur.Title}
	change := func(field, before, after string) {
		if before != after {
			out.Changes = append(out.Changes, executors.PreviewChange{Field: field, Before: before, After: after})
		}
	}
	if p.Title != nil {
		change("title", cur.Title, *p.Title)
	}
	if p.Description != nil {
		change("description", deref(cur.Description), *p.Description)
	}
	if p.Priority != nil && *p.Priority >= 0 && *p.Priority < len(priorityNames) && cur.Priority >= 0 && cur.Priority < len(priorityNames) {
		change("priority", priorityNames[cur.Priority], priorityNames[*p.Priority])
	}
	for _, f := range []struct {
		field, kind string
		to          *string
		now         *struct{ ID, Name string }
	}{{"state", "workflowState", p.StateID, cur.State}, {"assignee", "user", p.AssigneeID, cur.Assignee}} {
		if f.to == nil || (f.now != nil && f.now.ID == *f.to) {
			continue
		}
		after, err := s.name(ctx, ec, f.kind, *f.to, out)
		if err != nil {
			return nil, err
		}
		before := ""
		if f.now != nil {
			before = f.now.Name
		}
		change(f.field, before, after)
	}
	return out, nil
}

func deref[T any](p *T) T {
	if p == nil {
		return *new(T)
	}
	return *p
}
