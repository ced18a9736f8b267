package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

// previewCreateIssue renders create_issue as GitHub will create it. It
// reads the repository (a preview of an issue in a repository the token
// cannot see fails) and checks each assignee can be assigned there: one
// who cannot would have GitHub refuse the issue, which a note says.
func (s *client) previewCreateIssue(ctx context.Context, p *CreateIssueParams, ec executors.ExecContext) (*executors.Preview, error) {
	if _, err := s.api.Do(ctx, ec, &httpsource.Request{
		Method: http.MethodGet, Segments: []string{"repos", p.Owner, p.Repo}, Subject: "repository " + p.RepoRef.String(),
	}); err != nil {
		return nil, err
	}
	out := &executors.Preview{
		Kind: executors.PreviewIssue, Title: p.Title, Text: p.Body,
		Fields: []executors.PreviewField{{Name: "repository", Value: p.RepoRef.String()}},
	}
	if len(p.Labels) > 0 {
		out.Fields = append(out.Fields, executors.PreviewField{Name: "labels", Value: strings.Join(p.Labels, ", ")})
	}
	if len(p.Assignees) > 0 {
		out.Fields = append(out.Fields, executors.PreviewField{Name: "assignees", Value: strings.Join(p.Assignees, ", ")})
	}
	if p.Milestone != nil {
		out.Fields = append(out.Fields, executors.PreviewField{Name: "milestone", Value: fmt.Sprint(*p.Milestone)})
	}
	for _, a := range p.Assignees {
		_, err := s.api.Do(ctx, ec, &httpsource.Request{
			Method: http.MethodGet, Segments: []string{"repos", p.Owner, p.Repo, "assignees", a},
			Subject: "assignee " + a + " of " + p.RepoRef.String(), AllowEmpty: true,
		})
		var e *executors.Error
		switch {
		case errors.As(err, &e) && e.Code == "not_found":
			out.Notes = append(out.Notes, a+" cannot be assigned in "+p.RepoRef.String()+": GitHub will refuse the issue")
		case err != nil:
			return nil, err
		}
	}
	return out, nil
}
