package linear

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/outboxd/outboxd/executors"
)

//go:embed get_issue.schema.json
var getIssueSchema string

const getIssueDescription = "Read one Linear issue by its id or its identifier (such as ENG-123): title, " +
	"Markdown description, workflow state, priority (0 none, 1 urgent, 2 high, 3 medium, 4 low), assignee, " +
	"team, project, labels, url and timestamps. Read-only. Fails with not_found when the issue does not " +
	"exist or the token cannot see it."

// GetIssueParams are the params of get_issue.
type GetIssueParams struct {
	// IssueID is the issue's id or identifier.
	IssueID string `json:"issueId"`
}

// getIssueDefinition is get_issue's definition.
var getIssueDefinition = executors.Definition{
	ID:          ActionGetIssue,
	Description: getIssueDescription,
	Tier:        executors.TierR1,
	Delivery:    executors.DeliveryExactlyOnce,
	Params:      json.RawMessage(getIssueSchema),
}

func (s *client) getIssue(ctx context.Context, p *GetIssueParams, ec executors.ExecContext) (executors.Result, error) {
	if p.IssueID == "" {
		return executors.Result{}, executors.InvalidParams(ActionGetIssue, "issueId is required")
	}
	return s.fetchIssue(ctx, ec, p.IssueID)
}
