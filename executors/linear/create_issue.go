package linear

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/outboxd/outboxd/executors"
)

//go:embed create_issue.schema.json
var createIssueSchema string

const createIssueDescription = "Create a Linear issue in a team. Set `teamId` and a one-line `title`; " +
	"optionally a Markdown `description`, an assignee (`assigneeId`), a workflow state (`stateId`, default " +
	"the team's default state), a `priority` (0 none, 1 urgent, 2 high, 3 medium, 4 low), labels " +
	"(`labelIds`) and a project (`projectId`). Ids are UUIDs, such as those list_issues and get_issue " +
	"return. The issue is created once even if the call is retried. On success the provider reference is " +
	"the new issue's id and the result holds the issue, with its identifier (such as ENG-123) and url " +
	"(only its id when Linear confirms the create but the token cannot read the issue back)."

// CreateIssueParams are the params of create_issue. Their JSON names are
// those of Linear's IssueCreateInput, so they are sent as they are.
type CreateIssueParams struct {
	// TeamID is the team the issue belongs to.
	TeamID string `json:"teamId"`
	// Title is the issue title.
	Title string `json:"title"`
	// Description is the issue body in Markdown.
	Description string `json:"description,omitempty"`
	// AssigneeID is the user to assign the issue to.
	AssigneeID string `json:"assigneeId,omitempty"`
	// StateID is the workflow state to create the issue in.
	StateID string `json:"stateId,omitempty"`
	// Priority is 0 (none) to 4 (low); nil leaves it unset.
	Priority *int `json:"priority,omitempty"`
	// LabelIDs are the labels to put on the issue.
	LabelIDs []string `json:"labelIds,omitempty"`
	// ProjectID is the project to add the issue to.
	ProjectID string `json:"projectId,omitempty"`
}

// issueCreateInput is Linear's IssueCreateInput: the params plus the
// client-chosen id.
type issueCreateInput struct {
	ID string `json:"id,omitempty"`
	CreateIssueParams
}

const createIssueMutation = `mutation CreateIssue($input: IssueCreateInput!) {
  issueCreate(input: $input) {
    success
    issue {
      ` + issueFields + `
    }
  }
}`

// createIssueDefinition is create_issue's definition.
var createIssueDefinition = executors.Definition{
	ID:          ActionCreateIssue,
	Description: createIssueDescription,
	Tier:        executors.TierR2,
	Delivery:    executors.DeliveryExactlyOnce,
	Params:      json.RawMessage(createIssueSchema),
}

func (s *client) createIssue(ctx context.Context, p *CreateIssueParams, ec executors.ExecContext) (executors.Result, error) {
	switch {
	case p.TeamID == "":
		return executors.Result{}, executors.InvalidParams(ActionCreateIssue, "teamId is required")
	case p.Title == "":
		return executors.Result{}, executors.InvalidParams(ActionCreateIssue, "title is required")
	case !validPriority(p.Priority):
		return executors.Result{}, executors.InvalidParams(ActionCreateIssue, "priority must be 0 to 4")
	}

	input := issueCreateInput{CreateIssueParams: *p}
	if ec.IdempotencyKey != "" {
		input.ID = StableID(ActionCreateIssue, ec.IdempotencyKey)
	}

	var data struct {
		IssueCreate *issuePayload `json:"issueCreate"`
	}
	op := operation{
		name:      "CreateIssue",
		query:     createIssueMutation,
		variables: map[string]any{"input": input},
		mutation:  true,
	}
	if err := s.do(ctx, ec, op, &data); err != nil {
		if input.ID != "" && errorCode(err) == codeAlreadyExists {
			res, lookupErr := s.fetchIssue(ctx, ec, input.ID)
			return conflictResult(res, lookupErr, err, ec, input.ID)
		}
		return executors.Result{}, err
	}
	if data.IssueCreate == nil {
		data.IssueCreate = &issuePayload{}
	}
	return s.mutationResult(ctx, ec, "CreateIssue", data.IssueCreate.Success, data.IssueCreate.Issue, input.ID, (*client).fetchIssue)
}
