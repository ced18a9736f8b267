package linear

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/outboxd/outboxd/executors"
)

//go:embed update_issue.schema.json
var updateIssueSchema string

const updateIssueDescription = "Change fields of an existing Linear issue, given by its id or identifier " +
	"(such as ENG-123). Set only the fields to change, at least one: `title`, `description` (Markdown; " +
	"replaces the whole description, an empty string clears it), `assigneeId`, `stateId` (a workflow state " +
	"of the issue's team) or `priority` (0 none, 1 urgent, 2 high, 3 medium, 4 low). Ids are UUIDs. Fields " +
	"left out keep their values. On success the provider reference is the issue's id and the result holds " +
	"the updated issue (only the issueId given when Linear confirms the update but the token cannot read " +
	"the issue back)."

// UpdateIssueParams are the params of update_issue. A nil field is left as
// it is.
type UpdateIssueParams struct {
	// IssueID is the issue's id or identifier.
	IssueID string `json:"issueId"`
	// Title is the new title.
	Title *string `json:"title,omitempty"`
	// Description is the new Markdown body; "" clears it.
	Description *string `json:"description,omitempty"`
	// AssigneeID is the user to assign the issue to.
	AssigneeID *string `json:"assigneeId,omitempty"`
	// StateID is the workflow state to move the issue to.
	StateID *string `json:"stateId,omitempty"`
	// Priority is 0 (none) to 4 (low).
	Priority *int `json:"priority,omitempty"`
}

// issueUpdateInput is the part of Linear's IssueUpdateInput update_issue
// sets. Nil fields are left out, so Linear keeps their values.
type issueUpdateInput struct {
	Title       *string `json:"title,omitempty"`
	Description *string `json:"description,omitempty"`
	AssigneeID  *string `json:"assigneeId,omitempty"`
	StateID     *string `json:"stateId,omitempty"`
	Priority    *int    `json:"priority,omitempty"`
}

const updateIssueMutation = `mutation UpdateIssue($id: String!, $input: IssueUpdateInput!) {
  issueUpdate(id: $id, input: $input) {
    success
    issue {
      ` + issueFields + `
    }
  }
}`

// updateIssueDefinition is update_issue's definition.
var updateIssueDefinition = executors.Definition{
	ID:          ActionUpdateIssue,
	Description: updateIssueDescription,
	Tier:        executors.TierR2,
	Delivery:    executors.DeliveryExactlyOnce,
	Params:      json.RawMessage(updateIssueSchema),
}

func (s *client) updateIssue(ctx context.Context, p *UpdateIssueParams, ec executors.ExecContext) (executors.Result, error) {
	input := issueUpdateInput{
		Title:       p.Title,
		Description: p.Description,
		AssigneeID:  p.AssigneeID,
		StateID:     p.StateID,
		Priority:    p.Priority,
	}
	switch {
	case p.IssueID == "":
		return executors.Result{}, executors.InvalidParams(ActionUpdateIssue, "issueId is required")
	case input == issueUpdateInput{}:
		return executors.Result{}, executors.InvalidParams(ActionUpdateIssue,
			"nothing to change; set at least one of title, description, assigneeId, stateId, priority")
	case p.Title != nil && *p.Title == "":
		return executors.Result{}, executors.InvalidParams(ActionUpdateIssue, "title must not be empty")
	case p.AssigneeID != nil && *p.AssigneeID == "":
		return executors.Result{}, executors.InvalidParams(ActionUpdateIssue, "assigneeId must not be empty")
	case p.StateID != nil && *p.StateID == "":
		return executors.Result{}, executors.InvalidParams(ActionUpdateIssue, "stateId must not be empty")
	case !validPriority(p.Priority):
		return executors.Result{}, executors.InvalidParams(ActionUpdateIssue, "priority must be 0 to 4")
	}

	var data struct {
		IssueUpdate *issuePayload `json:"issueUpdate"`
	}
	op := operation{
		name:      "UpdateIssue",
		query:     updateIssueMutation,
		variables: map[string]any{"id": p.IssueID, "input": input},
		mutation:  true,
	}
	if err := s.do(ctx, ec, op, &data); err != nil {
		return executors.Result{}, err
	}
	if data.IssueUpdate == nil {
		data.IssueUpdate = &issuePayload{}
	}
	return s.mutationResult(ctx, ec, "UpdateIssue", data.IssueUpdate.Success, data.IssueUpdate.Issue, p.IssueID, (*client).fetchIssue)
}
