package linear

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/outboxd/outboxd/executors"
)

//go:embed add_comment.schema.json
var addCommentSchema string

const addCommentDescription = "Add a comment to a Linear issue, given by its id (a UUID, as list_issues " +
	"and get_issue return). Write `body` in Markdown. The comment is posted as the token's user or app, " +
	"once even if the call is retried. On success the provider reference is the new comment's id and the " +
	"result holds the comment with its url (only its id when Linear confirms the comment but the token " +
	"cannot read it back)."

// AddCommentParams are the params of add_comment. Their JSON names are
// those of Linear's CommentCreateInput, so they are sent as they are.
type AddCommentParams struct {
	// IssueID is the issue to comment on.
	IssueID string `json:"issueId"`
	// Body is the comment in Markdown.
	Body string `json:"body"`
}

// commentCreateInput is Linear's CommentCreateInput: the params plus the
// client-chosen id.
type commentCreateInput struct {
	ID string `json:"id,omitempty"`
	AddCommentParams
}

// commentFields is the selection of a comment add_comment returns.
const commentFields = `id body url createdAt updatedAt
    user { id name }
    issue { id identifier }`

const addCommentMutation = `mutation AddComment($input: CommentCreateInput!) {
  commentCreate(input: $input) {
    success
    comment {
      ` + commentFields + `
    }
  }
}`

const getCommentQuery = `query GetComment($id: String!) {
  comment(id: $id) {
    ` + commentFields + `
  }
}`

// commentPayload is Linear's CommentPayload, the answer of commentCreate.
type commentPayload struct {
	Success bool            `json:"success"`
	Comment json.RawMessage `json:"comment"`
}

// addCommentDefinition is add_comment's definition.
var addCommentDefinition = executors.Definition{
	ID:          ActionAddComment,
	Description: addCommentDescription,
	Tier:        executors.TierR2,
	Delivery:    executors.DeliveryExactlyOnce,
	Params:      json.RawMessage(addCommentSchema),
}

func (s *client) addComment(ctx context.Context, p *AddCommentParams, ec executors.ExecContext) (executors.Result, error) {
	switch {
	case p.IssueID == "":
		return executors.Result{}, executors.InvalidParams(ActionAddComment, "issueId is required")
	case p.Body == "":
		return executors.Result{}, executors.InvalidParams(ActionAddComment, "body is required")
	}

	input := commentCreateInput{AddCommentParams: *p}
	if ec.IdempotencyKey != "" {
		input.ID = StableID(ActionAddComment, ec.IdempotencyKey)
	}

	var data struct {
		CommentCreate *commentPayload `json:"commentCreate"`
	}
	op := operation{
		name:      "AddComment",
		query:     addCommentMutation,
		variables: map[string]any{"input": input},
		mutation:  true,
	}
	if err := s.do(ctx, ec, op, &data); err != nil {
		if input.ID != "" && errorCode(err) == codeAlreadyExists {
			res, lookupErr := s.fetchComment(ctx, ec, input.ID)
			return conflictResult(res, lookupErr, err, ec, input.ID)
		}
		return executors.Result{}, err
	}
	if data.CommentCreate == nil {
		data.CommentCreate = &commentPayload{}
	}
	return s.mutationResult(ctx, ec, "AddComment", data.CommentCreate.Success, data.CommentCreate.Comment, input.ID, (*client).fetchComment)
}

// fetchComment reads one comment by id. A comment Linear does not know is a
// codeNotFound failure.
func (s *client) fetchComment(ctx context.Context, ec executors.ExecContext, id string) (executors.Result, error) {
	var data struct {
		Comment json.RawMessage `json:"comment"`
	}
	op := operation{name: "GetComment", query: getCommentQuery, variables: map[string]any{"id": id}}
	if err := s.do(ctx, ec, op, &data); err != nil {
		return executors.Result{}, err
	}
	if isNull(data.Comment) {
		return executors.Result{}, &executors.Error{
			Code:    codeNotFound,
			Message: fmt.Sprintf("Linear has no comment %q that the token can see", id),
		}
	}
	return objectResult("GetComment", data.Comment)
}
