package linear

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/outboxd/outboxd/executors"
)

// issueFields is the selection of an issue that get_issue, create_issue and
// update_issue return: enough for an agent to act on the issue without a
// second read.
const issueFields = `id identifier title description priority priorityLabel url createdAt updatedAt
    state { id name type }
    assignee { id name }
    team { id key name }
    project { id name }
    labels { nodes { id name } }`

const getIssueQuery = `query GetIssue($id: String!) {
  issue(id: $id) {
    ` + issueFields + `
  }
}`

// issuePayload is Linear's IssuePayload, the answer of issueCreate and
// issueUpdate.
type issuePayload struct {
	Success bool            `json:"success"`
	Issue   json.RawMessage `json:"issue"`
}

// objectRef is the part of an issue or comment its ProviderRef comes from.
type objectRef struct {
	ID string `json:"id"`
}

// fetchIssue reads one issue by id or identifier. An issue Linear does not
// know is a codeNotFound failure.
func (s *client) fetchIssue(ctx context.Context, ec executors.ExecContext, id string) (executors.Result, error) {
	var data struct {
		Issue json.RawMessage `json:"issue"`
	}
	op := operation{name: "GetIssue", query: getIssueQuery, variables: map[string]any{"id": id}}
	if err := s.do(ctx, ec, op, &data); err != nil {
		return executors.Result{}, err
	}
	if isNull(data.Issue) {
		return executors.Result{}, &executors.Error{
			Code:    codeNotFound,
			Message: fmt.Sprintf("Linear has no issue %q that the token can see", id),
		}
	}
	return objectResult("GetIssue", data.Issue)
}

// mutationResult turns a create or update payload (its success flag and
// its object, raw) into a Result. A payload without success means Linear
// did not make the change and said no more; retrying would not help.
//
// A payload with success and a null object (as when the token may make the
// change but not read the object back) is Linear saying it acted: a failure
// would have the agent try again and create a second object. The object is
// read once by id, the id the create chose or the issue the update named;
// when that read finds nothing, the result holds only that id.
func (s *client) mutationResult(ctx context.Context, ec executors.ExecContext, opName string, success bool, obj json.RawMessage,
	id string, read func(*client, context.Context, executors.ExecContext, string) (executors.Result, error),
) (executors.Result, error) {
	switch {
	case !success:
		return executors.Result{}, &executors.Error{
			Code:    "mutation_failed",
			Message: fmt.Sprintf("Linear answered %s without success", opName),
		}
	case !isNull(obj):
		return objectResult(opName, obj)
	case id == "":
		return executors.Result{Data: json.RawMessage(`{"id":null}`)}, nil
	}
	if res, err := read(s, ctx, ec, id); err == nil {
		return res, nil
	}
	data, err := json.Marshal(objectRef{ID: id})
	if err != nil {
		return executors.Result{}, err
	}
	return executors.Result{Data: data, ProviderRef: id}, nil
}

// objectResult returns obj, an issue or a comment, as a Result whose
// ProviderRef is the object's id.
func objectResult(opName string, obj json.RawMessage) (executors.Result, error) {
	var ref objectRef
	if err := json.Unmarshal(obj, &ref); err != nil || ref.ID == "" {
		return executors.Result{}, &executors.Error{
			Code:      "invalid_response",
			Message:   fmt.Sprintf("Linear's answer to %s has no object id", opName),
			Retryable: true,
		}
	}
	return executors.Result{Data: obj, ProviderRef: ref.ID}, nil
}

// conflictResult completes a create that Linear refused with createErr
// because an object with the same stable id exists: a retry after an answer
// that was lost. res and lookupErr are the outcome of reading that object
// by id. Found, it is the result, marked as a conflict. Not found on a
// retry (a token that may create what it cannot read back), Linear still
// says the first attempt's object exists: the result, marked as a
// conflict, holds only its id, as when a create answers with a null
// object. Not found on a first attempt, whose id nothing before it took,
// the refusal was about something else and createErr stands.
func conflictResult(res executors.Result, lookupErr, createErr error, ec executors.ExecContext, id string) (executors.Result, error) {
	switch {
	case lookupErr == nil:
	case errorCode(lookupErr) != codeNotFound:
		return executors.Result{}, lookupErr
	case !ec.Retry:
		return executors.Result{}, createErr
	default:
		data, err := json.Marshal(objectRef{ID: id})
		if err != nil {
			return executors.Result{}, err
		}
		res = executors.Result{Data: data, ProviderRef: id}
	}
	res.Conflict = true
	return res, nil
}

// validPriority reports whether p is unset or one of Linear's priorities,
// 0 (none) to 4 (low).
func validPriority(p *int) bool {
	return p == nil || (*p >= 0 && *p <= 4)
}
